/**
 * The connection pool flowgate talks to MLflow through, from undici's public export (the package
 * index). A deep path into undici would break the day undici adds an exports map.
 */
export { Pool } from 'undici';
