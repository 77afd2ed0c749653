// End-to-end tests with the npm client SDKs, through the local gateway (running the compiled filter) to the
// strict mock providers. e2e/node_test.go starts the stack and runs `node --test` with GATEWAY_URL set.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AzureOpenAI } from "openai";
import ModelClient, { isUnexpected } from "@azure-rest/ai-inference";
import { AzureKeyCredential } from "@azure/core-auth";
import { createSseStream } from "@azure/core-sse";

const gateway = process.env.GATEWAY_URL;
assert.ok(gateway, "GATEWAY_URL must point at the local gateway");

// One route per provider dialect of the demo configuration (e2e/demo).
const providers = [
  { name: "openai", chat: "gpt-4o", embed: "text-embedding-3-large" },
  { name: "azure-openai", chat: "gpt-4o-mini", embed: "text-embedding-3-small" },
  { name: "azure-ai", chat: "llama-3-70b", embed: "embed-v3" },
  { name: "eternalai", chat: "intellect-1", embed: null },
];

// 429-brief: a 429 whose retry-after-ms is 1, so the gateway's bench of the provider is over before the next
// test (a 429 benches a provider for as long as it says: README "Failover").
const failHeader = { "x-mock-fail": "429-brief" };

// Each client adapts one SDK to the operations of the matrix; errors surface as { status, code }.
const clients = [
  {
    name: "openai",
    make: () => new OpenAI({ baseURL: `${gateway}/v1`, apiKey: "client-key", maxRetries: 0 }),
  },
  {
    name: "AzureOpenAI",
    make: () =>
      new AzureOpenAI({ endpoint: gateway, apiKey: "client-key", apiVersion: "2024-10-21", maxRetries: 0 }),
  },
].map(({ name, make }) => {
  // Azure OpenAI clients get Azure's content-filter annotation chunks (object ""), as from Azure itself.
  const azureClient = name === "AzureOpenAI";
  const client = make();
  return {
    name,
    async chat(model, headers) {
      const res = await client.chat.completions.create(
        { model, messages: [{ role: "user", content: "Say hello from node" }] },
        { headers },
      );
      return res.choices[0].message.content;
    },
    async stream(model) {
      const stream = await client.chat.completions.create({
        model,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "Stream hello" }],
      });
      let text = "";
      let usage = null;
      for await (const chunk of stream) {
        if (azureClient && chunk.object === "") continue;
        assert.equal(chunk.object, "chat.completion.chunk");
        if (chunk.usage) usage = chunk.usage;
        text += chunk.choices[0]?.delta?.content ?? "";
      }
      assert.ok(usage && usage.total_tokens > 0, "the usage chunk the client asked for");
      return text;
    },
    async embed(model) {
      const res = await client.embeddings.create({ model, input: "embed me" });
      return res.data[0].embedding.length;
    },
    errorOf(err) {
      return { status: err.status, code: err.code ?? err.error?.code };
    },
  };
});

// @azure-rest/ai-inference speaks the Azure AI Model Inference dialect to the gateway.
{
  const client = ModelClient(gateway, new AzureKeyCredential("client-key"), {
    retryOptions: { maxRetries: 0 },
    allowInsecureConnection: true, // the local gateway listens on plain HTTP on loopback
  });
  clients.push({
    name: "@azure-rest/ai-inference",
    async chat(model, headers) {
      const res = await client.path("/chat/completions").post({
        body: { model, messages: [{ role: "user", content: "Say hello from node" }] },
        headers,
      });
      if (isUnexpected(res)) throw Object.assign(new Error(JSON.stringify(res.body)), { res });
      return res.body.choices[0].message.content;
    },
    async stream(model) {
      const res = await client
        .path("/chat/completions")
        .post({ body: { model, stream: true, messages: [{ role: "user", content: "Stream hello" }] } })
        .asNodeStream();
      assert.equal(res.status, "200", `stream status ${res.status}`);
      let text = "";
      let done = 0;
      for await (const event of createSseStream(res.body)) {
        if (event.data === "[DONE]") {
          done++;
          continue;
        }
        const chunk = JSON.parse(event.data);
        assert.equal(chunk.error, undefined, `error event ${event.data}`);
        text += chunk.choices[0]?.delta?.content ?? "";
      }
      assert.equal(done, 1, "exactly one [DONE]");
      return text;
    },
    async embed(model) {
      const res = await client.path("/embeddings").post({ body: { model, input: ["embed me"] } });
      if (isUnexpected(res)) throw Object.assign(new Error(JSON.stringify(res.body)), { res });
      return res.body.data[0].embedding.length;
    },
    errorOf(err) {
      const res = err.res;
      if (!res) return { status: undefined, code: String(err) };
      assert.equal(typeof res.body.error?.message, "string", "azure-ai error envelope");
      return { status: Number(res.status), code: res.body.error.code };
    },
  });
}

for (const c of clients) {
  for (const p of providers) {
    test(`${c.name} -> ${p.name}`, async (t) => {
      await t.test("chat", async () => {
        const text = await c.chat(p.chat);
        assert.match(text, /hello/i);
      });
      await t.test("stream", async () => {
        const text = await c.stream(p.chat);
        assert.ok(text.length > 0, "streamed text");
      });
      await t.test("embeddings", async () => {
        if (p.embed === null) {
          await assert.rejects(c.embed(p.chat), (err) => {
            const { status, code } = c.errorOf(err);
            assert.equal(status, 404);
            assert.equal(code, "unsupported_operation");
            return true;
          });
          return;
        }
        assert.ok((await c.embed(p.embed)) > 0);
      });
      await t.test("error", async () => {
        await assert.rejects(c.chat(p.chat, failHeader), (err) => {
          assert.equal(c.errorOf(err).status, 429);
          return true;
        });
      });
    });
  }
}
