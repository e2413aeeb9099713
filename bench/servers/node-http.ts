// The physical limit: node:http answering a small JSON body, nothing else.
import { createServer, type ServerResponse } from 'node:http';

const GET_BODY = JSON.stringify({ data: { status: 'ok' } });

createServer((req, res) => {
  if (req.method !== 'POST') return reply(res, GET_BODY);
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { participant?: unknown };
    reply(res, JSON.stringify({ data: { participant: body.participant } }));
  });
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');

function reply(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
