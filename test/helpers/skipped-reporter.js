// Plain JavaScript: Jest loads reporters without transforming them.
/**
 * Jest reporter: after the run, lists every skipped test by its full name, so a test that did
 * not run here (e.g. one that needs TEST_DATABASE_URL) is seen, with the reason its title gives.
 */
export default class SkippedReporter {
  /** @param {unknown} _contexts @param {{ testResults: Array<{ testResults: Array<{ status: string, fullName: string }> }> }} results */
  onRunComplete(_contexts, results) {
    const skipped = results.testResults.flatMap((file) =>
      file.testResults.filter((t) => t.status === 'pending' || t.status === 'todo').map((t) => `  ○ ${t.fullName}`),
    );
    if (skipped.length > 0) process.stderr.write(`\nSkipped tests (${skipped.length}):\n${skipped.join('\n')}\n`);
  }
}
