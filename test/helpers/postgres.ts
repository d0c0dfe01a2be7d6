// Shared with the bench, which runs plain JavaScript.
export { postgresBinDir, startPostgres, type PostgresServer } from '../../scripts/postgres-cluster.mjs';
