// The official OpenAI client (npm `openai`) against the mesh's gateway: node openai-client.mjs BASE_URL MODEL
// Prints one line per check and exits non-zero on the first failure.
import OpenAI from "openai";
import assert from "node:assert/strict";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120_000 });
const messages = [{ role: "user", content: "Tell me about the sea" }];

const models = await client.models.list();
assert.ok(models.data.some((m) => m.id === model), `models.list lacks ${model}: ${JSON.stringify(models.data)}`);
console.log("ok models.list");

const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
const text = chat.choices[0].message.content;
assert.equal(typeof text, "string");
assert.ok(["length", "stop"].includes(chat.choices[0].finish_reason), chat.choices[0].finish_reason);
assert.ok(chat.usage.completion_tokens >= 1 && chat.usage.completion_tokens <= 8, JSON.stringify(chat.usage));
console.log("ok chat.completions");

let streamed = "";
let usage = null;
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  for (const choice of chunk.choices) streamed += choice.delta?.content ?? "";
  if (chunk.usage) usage = chunk.usage;
}
assert.equal(streamed, text, "a greedy stream spells the same text as the same request unstreamed");
assert.deepEqual(usage.completion_tokens, chat.usage.completion_tokens);
console.log("ok chat.completions stream");

const completion = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, temperature: 0 });
assert.equal(typeof completion.choices[0].text, "string");
assert.ok(completion.usage.prompt_tokens > 0);
console.log("ok completions");

await assert.rejects(client.chat.completions.create({ model: "no-such-model", messages, max_tokens: 2 }),
  (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
await assert.rejects(client.chat.completions.create({ model, messages, max_tokens: 2, temperature: 5 }),
  (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature");
console.log("ok errors");
