// Writes openapi/admin-api.json from the compiled route table (run after `npm run build`).
import { writeFileSync } from 'node:fs';
import { buildOpenApi } from '../dist/admin/openapi.js';
import { ADMIN_ROUTES } from '../dist/admin/routes.js';
import { VERSION } from '../dist/version.js';

writeFileSync(new URL('../openapi/admin-api.json', import.meta.url), JSON.stringify(buildOpenApi(ADMIN_ROUTES, VERSION), null, 2) + '\n');
console.log('wrote openapi/admin-api.json');
