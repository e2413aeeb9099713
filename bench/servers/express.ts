// The framework ceiling: a bare Express 5 app answering what node-http.ts answers.
import express from 'express';

const app = express();
app.get('/', (_req, res) => {
  res.json({ data: { status: 'ok' } });
});
app.post('/', express.json(), (req, res) => {
  res.json({ data: { participant: (req.body as { participant?: unknown }).participant } });
});
app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
