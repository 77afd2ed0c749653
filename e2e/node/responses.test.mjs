// End-to-end tests of the OpenAI Responses API (POST /v1/responses and its Azure OpenAI surfaces) with the
// npm clients, through the local gateway (running the compiled filter) to the strict mock providers:
// the openai SDK (client.responses.create and client.responses.stream, on /v1 and, as AzureOpenAI, on
// /openai/responses?api-version=…) and the Vercel AI SDK (openai(model) on /v1/responses, azure(deployment) on
// /openai/v1/responses and, with useDeploymentBasedUrls, on /openai/deployments/{d}/responses), each against
// every Responses route of the demo (e2e/demo): openai and azure-openai, to which the filter forwards the
// request as it is, and azure-ai, eternalai and an openai model marked chat_only, for which it bridges the
// request to Chat Completions and builds the Response (or its event stream) from the chat answer.
//
// The mocks echo: "echo: <last user text>", or "echo: <tool output>" after a function_call_output; with tools
// they call the first one with {"text": <last user text>}. e2e/node_test.go (TestNodeResponses) starts the
// stack, runs this file with GATEWAY_URL set, then checks where each request carrying x-e2e-responses reached
// the mocks.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AzureOpenAI } from "openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAzure } from "@ai-sdk/azure";
import { createOpenAI } from "@ai-sdk/openai";

const gateway = process.env.GATEWAY_URL;
assert.ok(gateway, "GATEWAY_URL must point at the local gateway");

// The Responses routes of the demo. served: the model the answer names (each provider's own way).
const routes = [
  { name: "openai", model: "gpt-4o", served: "gpt-4o" },
  { name: "openai chat_only", model: "gpt-4o-chat", served: "gpt-4o", bridged: true },
  { name: "azure-openai", model: "gpt-4o-mini", served: "gpt-4o-2024-08-06" },
  { name: "azure-ai", model: "llama-3-70b", served: "Meta-Llama-3-70B-Instruct", bridged: true },
  { name: "eternalai", model: "intellect-1", served: "PrimeIntellect/INTELLECT-1-Instruct", bridged: true },
];

const apiKey = "client-key"; // the gateway replaces it with the provider's key
const azureApiVersion = "2025-04-01-preview"; // the classic Responses surface needs 2025-03-01-preview or later
const surfaceHeader = "x-e2e-responses";

const toolName = "lookup";
const toolParameters = {
  type: "object",
  properties: { text: { type: "string", description: "what to look up" } },
  required: ["text"],
  additionalProperties: false,
};
const lookup = (text) => ({ chars: text.length });

function assertUsage(u, what) {
  assert.ok(u, `${what}: usage`);
  assert.ok(u.input_tokens > 0 && u.output_tokens > 0, `${what}: input and output tokens > 0, got ${JSON.stringify(u)}`);
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens, `${what}: total tokens`);
  assert.equal(typeof u.input_tokens_details?.cached_tokens, "number", `${what}: input_tokens_details.cached_tokens`);
  assert.equal(typeof u.output_tokens_details?.reasoning_tokens, "number", `${what}: output_tokens_details.reasoning_tokens`);
}

function assertResponse(res, route, what) {
  assert.equal(res.object, "response", `${what}: object`);
  assert.match(res.id, /^resp_/, `${what}: id`);
  assert.equal(res.status, "completed", `${what}: status`);
  assert.equal(res.error ?? null, null, `${what}: error`);
  assert.equal(res.model, route.served, `${what}: the provider that answered`);
  assert.ok(Array.isArray(res.output) && res.output.length > 0, `${what}: output items`);
  assertUsage(res.usage, what);
}

// checkEvents holds a Responses event sequence to what OpenAI sends and what the strict clients need:
// created then in_progress, sequence_number counting from 0, items added at the next output_index, part-level
// events naming the item at their output_index, .done events with the whole text or arguments, and one final
// response.completed whose output holds every finished item.
function checkEvents(events, what) {
  const names = events.map((e) => e.type);
  assert.deepEqual(names.slice(0, 2), ["response.created", "response.in_progress"], `${what}: first events ${names}`);
  assert.equal(names.at(-1), "response.completed", `${what}: last event of ${names}`);
  const items = [];
  let text = "";
  let args = "";
  const id = events[0].response.id;
  events.forEach((e, i) => {
    assert.equal(e.sequence_number, i, `${what}: ${e.type} at ${i} has sequence_number ${e.sequence_number}`);
    if (e.response) assert.equal(e.response.id, id, `${what}: one response id through the stream`);
    const item = items[e.output_index];
    const onItem = (type) => {
      assert.ok(item, `${what}: ${e.type} at output_index ${e.output_index} before its item was added`);
      assert.equal(e.item_id, item.id, `${what}: ${e.type} names item ${e.item_id}, ${item.id} is at ${e.output_index}`);
      assert.equal(item.type, type, `${what}: ${e.type} on a ${item.type} item`);
    };
    switch (e.type) {
      case "response.output_item.added":
        assert.equal(e.output_index, items.length, `${what}: output_item.added at the next output_index`);
        assert.ok(e.item.id, `${what}: an item id`);
        items.push({ id: e.item.id, type: e.item.type, call_id: e.item.call_id, text: "", args: "" });
        break;
      case "response.content_part.added":
        onItem("message");
        break;
      case "response.output_text.delta":
        onItem("message");
        item.text += e.delta;
        text += e.delta;
        break;
      case "response.output_text.done":
        onItem("message");
        assert.equal(e.text, item.text, `${what}: output_text.done carries the whole text`);
        break;
      case "response.function_call_arguments.delta":
        onItem("function_call");
        item.args += e.delta;
        args += e.delta;
        break;
      case "response.function_call_arguments.done":
        onItem("function_call");
        assert.equal(e.arguments, item.args, `${what}: function_call_arguments.done carries the whole arguments`);
        break;
      case "response.output_item.done":
        assert.ok(item, `${what}: output_item.done at ${e.output_index}`);
        assert.deepEqual([e.item.id, e.item.type, e.item.call_id], [item.id, item.type, item.call_id], `${what}: output_item.done finishes the added item`);
        assert.equal(e.item.status, "completed", `${what}: finished item status`);
        item.done = e.item;
        break;
      case "response.failed":
      case "response.incomplete":
      case "error":
        assert.fail(`${what}: ${JSON.stringify(e)}`);
    }
  });
  const final = events.at(-1).response;
  assert.equal(final.output.length, items.length, `${what}: response.completed holds every item`);
  final.output.forEach((o, k) => assert.deepEqual(o, items[k].done, `${what}: response.completed output[${k}]`));
  return { text, args, final, deltas: names.filter((n) => n.endsWith(".delta")).length };
}

// ---- the openai SDK ---------------------------------------------------------------------------------------

const sdkSurfaces = [
  {
    name: "openai /v1/responses",
    client: new OpenAI({
      baseURL: `${gateway}/v1`,
      apiKey,
      maxRetries: 0,
      defaultHeaders: { [surfaceHeader]: "openai" },
    }),
  },
  {
    // POST /openai/responses?api-version=…, the body model naming the deployment
    name: "AzureOpenAI /openai/responses",
    client: new AzureOpenAI({
      endpoint: gateway,
      apiKey,
      apiVersion: azureApiVersion,
      maxRetries: 0,
      defaultHeaders: { [surfaceHeader]: "AzureOpenAI" },
    }),
  },
];

const functionTool = { type: "function", name: toolName, description: "Looks a text up", parameters: toolParameters, strict: true };

for (const { name, client } of sdkSurfaces) {
  for (const r of routes) {
    test(`${name} -> ${r.name}`, async (t) => {
      await t.test("responses.create", async () => {
        const prompt = "Say hello from node";
        const res = await client.responses.create({ model: r.model, input: prompt, instructions: "Be terse.", store: false });
        assertResponse(res, r, "create");
        assert.equal(res.output_text, `echo: ${prompt}`);
        assert.equal(res.output[0].type, "message");
        assert.match(res.output[0].id, /^msg_/);
        assert.equal(res.instructions, "Be terse.");
      });

      await t.test("responses.stream", async () => {
        const prompt = "Stream hello";
        const stream = client.responses.stream({ model: r.model, input: prompt, store: false });
        const events = [];
        for await (const e of stream) events.push(e);
        const final = await stream.finalResponse();
        const seen = checkEvents(events, "stream");
        assert.equal(seen.text, `echo: ${prompt}`);
        assert.ok(seen.deltas > 1, `streamed in pieces, got ${seen.deltas}`);
        assertResponse(final, r, "finalResponse");
        assert.equal(final.output_text, `echo: ${prompt}`, "finalResponse output_text");
      });

      await t.test("two-turn tool call", async () => {
        const prompt = "Look up Paris";
        const input = [{ role: "user", content: prompt }];
        const first = await client.responses.create({ model: r.model, input, tools: [functionTool], store: false });
        assertResponse(first, r, "first turn");
        assert.equal(first.output.length, 1, "one output item");
        const [call] = first.output;
        assert.equal(call.type, "function_call");
        assert.equal(call.name, toolName);
        assert.match(call.call_id, /^call_/);
        assert.match(call.id, /^fc_/);
        assert.deepEqual(JSON.parse(call.arguments), { text: prompt });
        const output = JSON.stringify(lookup(JSON.parse(call.arguments).text));
        const second = await client.responses.create({
          model: r.model,
          input: [...input, call, { type: "function_call_output", call_id: call.call_id, output }],
          tools: [functionTool],
          store: false,
        });
        assertResponse(second, r, "second turn");
        assert.equal(second.output_text, `echo: ${output}`);
      });

      await t.test("streamed tool call", async () => {
        const prompt = "Look up Lisbon";
        const stream = client.responses.stream({ model: r.model, input: prompt, tools: [functionTool], store: false });
        const events = [];
        for await (const e of stream) events.push(e);
        const final = await stream.finalResponse();
        const seen = checkEvents(events, "streamed tool call");
        assert.deepEqual(JSON.parse(seen.args), { text: prompt });
        assert.equal(final.output[0].type, "function_call");
        assert.equal(final.output[0].arguments, seen.args);
      });

      await t.test("previous_response_id", async () => {
        if (!r.bridged) {
          // the provider keeps what it answered (store defaults to true): the continuation reaches it
          const first = await client.responses.create({ model: r.model, input: "Remember me" });
          const next = await client.responses.create({ model: r.model, input: "And then?", previous_response_id: first.id });
          assert.equal(next.previous_response_id, first.id);
          assert.equal(next.output_text, "echo: And then?");
          return;
        }
        // a provider with only Chat Completions has no stored response: the gateway refuses, naming the fix
        await assert.rejects(
          client.responses.create({ model: r.model, input: "And then?", previous_response_id: "resp_0123456789abcdef" }),
          (err) => {
            assert.equal(err.status, 400, String(err));
            assert.match(err.message, /previous_response_id/);
            assert.match(err.message, /store: false/);
            return true;
          },
        );
      });
    });
  }
}

// ---- the Vercel AI SDK ------------------------------------------------------------------------------------

const providerOptions = { openai: { store: false } }; // @ai-sdk/azure falls back to the openai options

function vercelSurface(name, model) {
  const lookupTool = tool({
    description: "Looks a text up",
    inputSchema: jsonSchema(toolParameters),
    execute: async ({ text }) => lookup(text),
  });
  const usageOf = (u) => ({ input: u.inputTokens, output: u.outputTokens, total: u.totalTokens });
  async function* parts(result) {
    for await (const part of result.fullStream) {
      if (part.type === "error") throw part.error;
      yield part;
    }
  }
  return {
    name,
    async generate(id, prompt) {
      const r = await generateText({ model: model(id), prompt, providerOptions, maxRetries: 0 });
      return { text: r.text, finish: r.finishReason, usage: usageOf(r.usage), served: r.response.modelId };
    },
    async stream(id, prompt) {
      const r = streamText({ model: model(id), prompt, providerOptions, maxRetries: 0 });
      let text = "";
      let deltas = 0;
      for await (const part of parts(r)) {
        if (part.type === "text-delta") {
          text += part.text;
          deltas++;
        }
      }
      return { text, deltas, finish: await r.finishReason, usage: usageOf(await r.usage), served: (await r.response).modelId };
    },
    async tools(id, prompt) {
      const r = await generateText({
        model: model(id),
        prompt,
        tools: { [toolName]: lookupTool },
        stopWhen: stepCountIs(2),
        providerOptions,
        maxRetries: 0,
      });
      assert.equal(r.steps.length, 2, "two steps: the tool call, then the answer");
      const [first, second] = r.steps;
      assert.equal(first.toolResults.length, 1, "the tool ran");
      return {
        calls: first.toolCalls.map((c) => ({ name: c.toolName, args: c.input, id: c.toolCallId })),
        callFinish: first.finishReason,
        text: second.text,
        finish: second.finishReason,
        usage: usageOf(r.totalUsage),
        toolResult: JSON.stringify(first.toolResults[0].output),
      };
    },
    async streamTools(id, prompt) {
      const r = streamText({
        model: model(id),
        prompt,
        tools: { [toolName]: lookupTool },
        stopWhen: stepCountIs(2),
        providerOptions,
        maxRetries: 0,
      });
      const calls = [];
      let argDeltas = 0;
      for await (const part of parts(r)) {
        if (part.type === "tool-input-delta") argDeltas++;
        if (part.type === "tool-call") calls.push({ name: part.toolName, args: part.input, id: part.toolCallId });
      }
      const steps = await r.steps;
      assert.equal(steps.length, 2, "two steps: the tool call, then the answer");
      return {
        calls,
        argDeltas,
        callFinish: steps[0].finishReason,
        text: await r.text,
        finish: await r.finishReason,
        usage: usageOf(await r.totalUsage),
        toolResult: JSON.stringify(steps[0].toolResults[0].output),
      };
    },
  };
}

const vercelSurfaces = [];
{
  const headers = (surface) => ({ [surfaceHeader]: surface });
  // openai(model): the Responses API, POST {baseURL}/responses
  const openai = createOpenAI({ baseURL: `${gateway}/v1`, apiKey, headers: headers("vercel/openai") });
  vercelSurfaces.push(vercelSurface("vercel openai(model) /v1/responses", openai));
  // azure(deployment) with a baseURL that is no Azure host: POST {baseURL}/responses, no api-version
  const azure = createAzure({ baseURL: `${gateway}/openai/v1`, apiKey, headers: headers("vercel/azure") });
  vercelSurfaces.push(vercelSurface("vercel azure(deployment) /openai/v1/responses", azure));
  // useDeploymentBasedUrls: POST {baseURL}/deployments/{deployment}/responses?api-version=…
  const azureDeployments = createAzure({
    baseURL: `${gateway}/openai`,
    apiKey,
    useDeploymentBasedUrls: true,
    apiVersion: azureApiVersion,
    headers: headers("vercel/azure-deployments"),
  });
  vercelSurfaces.push(vercelSurface("vercel azure(deployment) /openai/deployments/{d}/responses", azureDeployments));
}

function assertVercelUsage(u, what) {
  assert.ok(u.input > 0 && u.output > 0, `${what}: input and output tokens > 0, got ${JSON.stringify(u)}`);
  assert.equal(u.total, u.input + u.output, `${what}: total tokens`);
}

for (const s of vercelSurfaces) {
  for (const r of routes) {
    test(`${s.name} -> ${r.name}`, async (t) => {
      await t.test("generateText", async () => {
        const prompt = "Say hello";
        const res = await s.generate(r.model, prompt);
        assert.equal(res.text, `echo: ${prompt}`);
        assert.equal(res.finish, "stop");
        assert.equal(res.served, r.served, "the provider that answered");
        assertVercelUsage(res.usage, "generateText usage");
      });

      await t.test("streamText", async () => {
        const prompt = "Stream hello";
        const res = await s.stream(r.model, prompt);
        assert.equal(res.text, `echo: ${prompt}`);
        assert.ok(res.deltas > 1, `streamed in pieces, got ${res.deltas}`);
        assert.equal(res.finish, "stop", "finishReason (other: the terminal event lacked usage or status)");
        assert.equal(res.served, r.served, "the provider that answered");
        assertVercelUsage(res.usage, "streamText usage");
      });

      const checkToolRun = (res, prompt) => {
        assert.equal(res.calls.length, 1, `one tool call, got ${JSON.stringify(res.calls)}`);
        const [call] = res.calls;
        assert.equal(call.name, toolName);
        assert.deepEqual(call.args, { text: prompt });
        assert.match(call.id, /^call_/);
        assert.equal(res.callFinish, "tool-calls");
        assert.equal(res.toolResult, JSON.stringify(lookup(prompt)));
        assert.equal(res.text, `echo: ${res.toolResult}`, "the answer to the tool result");
        assert.equal(res.finish, "stop");
        assertVercelUsage(res.usage, "usage of both steps");
      };

      await t.test("tool round trip", async () => {
        const prompt = "Look up Paris";
        checkToolRun(await s.tools(r.model, prompt), prompt);
      });

      await t.test("streamed tool round trip", async () => {
        const prompt = "Look up Lisbon";
        const res = await s.streamTools(r.model, prompt);
        checkToolRun(res, prompt);
        assert.ok(res.argDeltas > 0, "the call's arguments arrived as stream deltas");
      });
    });
  }
}
