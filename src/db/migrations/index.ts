import { Migration20261122000000_initial } from './Migration20261122000000_initial.js';

/** Migrations in order; listed explicitly so compiled and test runs find the same set. */
export const migrationsList = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
];
