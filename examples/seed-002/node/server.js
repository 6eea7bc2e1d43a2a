// Seed 002's Node.js hello world: Express 4.18.2, as the seed, one route answering
// "Hello World\n" as text/plain on 127.0.0.1 at the port given as the only argument
// (gatebench's {port}). The suite starts it with the seed's flags and --trace-gc.
'use strict';
const express = require('express');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node server.js PORT');
  process.exit(2);
}
const app = express();
// No X-Powered-By header or ETag: the seed's servers send the bare answer.
app.disable('x-powered-by');
app.disable('etag');
app.get('/', (req, res) => {
  res.type('text/plain').send('Hello World\n');
});
app.listen(port, '127.0.0.1');
