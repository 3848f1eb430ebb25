import { spawnSync } from 'node:child_process';
import { MIN_NODE_MAJOR, assertSupportedNode } from '../src/runtime.js';

const major = (version: string): number => Number(version.replace(/^v/, '').split('.')[0]);

test('the tests run on Node 24 or newer (npm scripts put node_modules/.bin/node first)', () => {
  expect(major(process.versions.node)).toBeGreaterThanOrEqual(MIN_NODE_MAJOR);
  // What `node` means to every script and child process that npm starts.
  const onPath = spawnSync('node', ['--version'], { encoding: 'utf8' });
  expect(onPath.status).toBe(0);
  expect(major(onPath.stdout.trim())).toBeGreaterThanOrEqual(MIN_NODE_MAJOR);
});

test('the gateway and the CLI refuse a Node older than 24, saying how to run it', () => {
  const refusals: string[] = [];
  const exit = (message: string): never => {
    refusals.push(message);
    throw new Error('exited');
  };
  expect(() => assertSupportedNode('20.20.2', exit)).toThrow('exited');
  expect(refusals[0]).toMatch(/needs Node 24 or newer; this is Node 20\.20\.2, which is past end of life/);
  expect(refusals[0]).toContain('npm start');
  assertSupportedNode('24.0.0', exit);
  assertSupportedNode('26.1.0', exit);
  expect(refusals).toHaveLength(1);
});
