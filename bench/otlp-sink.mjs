// A stand-in OTLP/HTTP collector for BENCH_TRACING=1: takes every export, counts the spans' bytes and
// answers 200 at once, so the traced row measures flowgate's own tracing cost and not a collector's.
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (c) => (bytes += c.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
    res.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'stats') process.send?.({ exports, bytes });
});
process.on('disconnect', () => server.close(() => process.exit(0)));
