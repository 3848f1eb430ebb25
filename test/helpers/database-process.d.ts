import type { ChildProcess } from 'node:child_process';

export function startDatabaseProcess(template: string): Promise<{ child: ChildProcess; port: number }>;
export function databaseControl(port: number | string, action: 'acquire' | 'release', params?: Record<string, string | number>): Promise<{ url?: string }>;
export function stopDatabaseProcess(child: ChildProcess): Promise<void>;
