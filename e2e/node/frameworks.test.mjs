// End-to-end tests with the LLM frameworks people build on, through the local gateway (running the compiled
// filter) to the strict mock providers: the Vercel AI SDK (ai with @ai-sdk/openai, @ai-sdk/azure and
// @ai-sdk/openai-compatible) and LangChain JS (@langchain/openai). e2e/node_test.go starts the stack and runs
// `node --test` on this file and clients.test.mjs with GATEWAY_URL set.
//
// Every surface (a framework's provider class on one gateway path) runs the same matrix against the four
// provider dialects of the demo configuration (e2e/demo): chat, streamed chat with usage, a tool-call round
// trip (call, tool result, final answer), the same round trip streamed, and embeddings. The mocks echo: a chat
// answer is "echo: <last user text>", or "echo: <tool result>" after a tool message; with tools they call the
// first tool with the arguments {"text": <last user text>}. Each request carries an x-e2e-surface header, which
// the gateway forwards untouched: e2e/node_test.go then checks which Azure OpenAI deployment each of them
// reached at the azure mock.
import { test } from "node:test";
import assert from "node:assert/strict";
import { embedMany, generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAzure } from "@ai-sdk/azure";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { AzureChatOpenAI, AzureOpenAIEmbeddings, ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";

const gateway = process.env.GATEWAY_URL;
assert.ok(gateway, "GATEWAY_URL must point at the local gateway");

// One route per provider dialect of the demo configuration. served: the model the provider's answer names (the
// mocks echo the request's model, except Azure OpenAI, which names the model behind the deployment, and Azure
// AI, which names its canonical model), so each answer shows which provider served it.
const routes = [
  { name: "openai", chat: "gpt-4o", served: "gpt-4o", embed: "text-embedding-3-large" },
  { name: "azure-openai", chat: "gpt-4o-mini", served: "gpt-4o-2024-08-06", embed: "text-embedding-3-small" },
  { name: "azure-ai", chat: "llama-3-70b", served: "Meta-Llama-3-70B-Instruct", embed: "embed-v3" },
  { name: "eternalai", chat: "intellect-1", served: "PrimeIntellect/INTELLECT-1-Instruct", embed: null },
];

const apiKey = "client-key"; // the gateway replaces it with the provider's key
const azureApiVersion = "2024-10-21";
const dimensions = 256; // asked of every embeddings request (the mocks' default is 1536)
const surfaceHeader = "x-e2e-surface";

// The test tool: the mocks call it with {"text": <prompt>}; its result comes back echoed in the final answer.
const toolName = "lookup";
const toolDescription = "Looks a text up";
const toolParameters = {
  type: "object",
  properties: { text: { type: "string", description: "what to look up" } },
  required: ["text"],
  additionalProperties: false,
};
const lookup = (text) => ({ chars: text.length });

function assertUsage(usage, what) {
  const { input, output, total } = usage;
  assert.ok(input > 0 && output > 0, `${what}: input and output tokens > 0, got ${JSON.stringify(usage)}`);
  assert.equal(total, input + output, `${what}: total tokens`);
}

function assertEmbeddings(vectors, what) {
  assert.equal(vectors.length, 2, `${what}: one vector per input`);
  for (const v of vectors) {
    assert.equal(v.length, dimensions, `${what}: dimensions`);
    assert.ok(v.every(Number.isFinite), `${what}: finite components`);
    const norm = Math.hypot(...v);
    assert.ok(Math.abs(norm - 1) < 1e-3, `${what}: unit vector (the mocks' vectors are), norm ${norm}`);
  }
  assert.notDeepEqual(vectors[0], vectors[1], `${what}: distinct inputs, distinct vectors`);
}

// ---- Vercel AI SDK ----------------------------------------------------------------------------------------

function vercelSurface(name, chatModel, embeddingModel) {
  const lookupTool = tool({
    description: toolDescription,
    inputSchema: jsonSchema(toolParameters),
    execute: async ({ text }) => lookup(text),
  });
  const usageOf = (u) => ({ input: u.inputTokens, output: u.outputTokens, total: u.totalTokens });
  // streamText reports failures as error parts; this rethrows them.
  async function* parts(result) {
    for await (const part of result.fullStream) {
      if (part.type === "error") throw part.error;
      yield part;
    }
  }
  return {
    name,
    async chat(model, prompt) {
      const r = await generateText({ model: chatModel(model), prompt, maxRetries: 0 });
      return { text: r.text, finish: r.finishReason, usage: usageOf(r.usage), served: r.response.modelId };
    },
    async stream(model, prompt) {
      const r = streamText({ model: chatModel(model), prompt, maxRetries: 0 });
      let text = "";
      let deltas = 0;
      for await (const part of parts(r)) {
        if (part.type === "text-delta") {
          text += part.text;
          deltas++;
        }
      }
      return {
        text,
        deltas,
        finish: await r.finishReason,
        usage: usageOf(await r.usage),
        served: (await r.response).modelId,
      };
    },
    async tools(model, prompt) {
      const r = await generateText({
        model: chatModel(model),
        prompt,
        tools: { [toolName]: lookupTool },
        stopWhen: stepCountIs(3),
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
    async streamTools(model, prompt) {
      const r = streamText({
        model: chatModel(model),
        prompt,
        tools: { [toolName]: lookupTool },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      const calls = [];
      let argDeltas = 0;
      let results = 0;
      for await (const part of parts(r)) {
        if (part.type === "tool-input-delta") argDeltas++;
        if (part.type === "tool-call") calls.push({ name: part.toolName, args: part.input, id: part.toolCallId });
        if (part.type === "tool-result") results++;
      }
      const steps = await r.steps;
      assert.equal(steps.length, 2, "two steps: the tool call, then the answer");
      assert.equal(results, 1, "the tool ran");
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
    async embed(model, values) {
      // @ai-sdk/openai and @ai-sdk/azure read the "openai" options; @ai-sdk/openai-compatible its provider name.
      const options = { dimensions };
      const r = await embedMany({
        model: embeddingModel(model),
        values,
        maxRetries: 0,
        providerOptions: { openai: options, gateway: options, azureai: options },
      });
      assert.ok(r.usage.tokens > 0, `embeddings usage tokens > 0, got ${JSON.stringify(r.usage)}`);
      return r.embeddings;
    },
    errorOf(err) {
      // AI_APICallError; the body is in the client dialect's error envelope (OpenAI's or Azure AI's).
      let code;
      try {
        code = JSON.parse(err.responseBody).error.code;
      } catch {
        code = String(err);
      }
      return { status: err.statusCode, code };
    },
  };
}

const surfaces = [];
{
  const headers = (surface) => ({ [surfaceHeader]: surface });
  const openai = createOpenAI({ baseURL: `${gateway}/v1`, apiKey, headers: headers("vercel/openai") });
  // .chat: openai(model) would call the Responses API, which the gateway does not serve.
  surfaces.push(vercelSurface("vercel @ai-sdk/openai /v1", openai.chat, openai.embedding));

  const compat = createOpenAICompatible({
    name: "gateway",
    baseURL: `${gateway}/v1`,
    apiKey,
    includeUsage: true, // stream_options.include_usage
    headers: headers("vercel/openai-compatible"),
  });
  surfaces.push(vercelSurface("vercel @ai-sdk/openai-compatible /v1", compat.chatModel, compat.textEmbeddingModel));

  // Azure OpenAI's v1 surface (@ai-sdk/azure's default URL shape): /openai/v1/{op}, the body model names the
  // deployment.
  const azureV1 = createAzure({ baseURL: `${gateway}/openai/v1`, apiKey, headers: headers("vercel/azure-v1") });
  surfaces.push(vercelSurface("vercel @ai-sdk/azure /openai/v1", azureV1.chat, azureV1.embedding));

  // Azure OpenAI's classic surface: /openai/deployments/{deployment}/{op}?api-version=…
  const azureClassic = createAzure({
    baseURL: `${gateway}/openai`,
    apiKey,
    useDeploymentBasedUrls: true,
    apiVersion: azureApiVersion,
    headers: headers("vercel/azure-deployments"),
  });
  surfaces.push(vercelSurface("vercel @ai-sdk/azure /openai/deployments", azureClassic.chat, azureClassic.embedding));

  // Azure AI Model Inference clients: /models/{op}?api-version=…, api-key header.
  const azureAI = createOpenAICompatible({
    name: "azureai",
    baseURL: `${gateway}/models`,
    headers: { "api-key": apiKey, ...headers("vercel/azure-ai") },
    queryParams: { "api-version": "2024-05-01-preview" },
    includeUsage: true,
  });
  surfaces.push(
    vercelSurface("vercel @ai-sdk/openai-compatible /models (Azure AI)", azureAI.chatModel, azureAI.textEmbeddingModel),
  );
}

// ---- LangChain JS -----------------------------------------------------------------------------------------

function langchainSurface(name, { chatModel, embeddings }) {
  const toolDef = {
    type: "function",
    function: { name: toolName, description: toolDescription, parameters: toolParameters },
  };
  const usageOf = (m) => {
    assert.ok(m.usage_metadata, "usage_metadata");
    const u = m.usage_metadata;
    return { input: u.input_tokens, output: u.output_tokens, total: u.total_tokens };
  };
  const concat = (agg, chunk) => (agg ? agg.concat(chunk) : chunk);
  const callsOf = (m) => m.tool_calls.map((c) => ({ name: c.name, args: c.args, id: c.id }));
  // The tool result message for the first tool call of an assistant message.
  const toolMessage = (ai) => {
    const call = ai.tool_calls[0];
    assert.ok(call, "a tool call to answer");
    const content = JSON.stringify(lookup(call.args.text));
    return { content, message: new ToolMessage({ tool_call_id: call.id, content }) };
  };
  return {
    name,
    async chat(model, prompt) {
      const m = await chatModel(model).invoke(prompt);
      const { finish_reason: finish, model_name: served } = m.response_metadata;
      return { text: m.content, finish, usage: usageOf(m), served };
    },
    async stream(model, prompt) {
      let agg;
      let deltas = 0;
      for await (const chunk of await chatModel(model).stream(prompt)) {
        if (typeof chunk.content === "string" && chunk.content !== "") deltas++;
        agg = concat(agg, chunk);
      }
      const { finish_reason: finish, model_name: served } = agg.response_metadata;
      return { text: agg.content, deltas, finish, usage: usageOf(agg), served };
    },
    async tools(model, prompt) {
      const llm = chatModel(model).bindTools([toolDef]);
      const human = new HumanMessage(prompt);
      const ai = await llm.invoke([human]);
      const { content, message } = toolMessage(ai);
      const final = await llm.invoke([human, ai, message]);
      const u1 = usageOf(ai);
      const u2 = usageOf(final);
      return {
        calls: callsOf(ai),
        callFinish: ai.response_metadata.finish_reason,
        text: final.content,
        finish: final.response_metadata.finish_reason,
        usage: { input: u1.input + u2.input, output: u1.output + u2.output, total: u1.total + u2.total },
        toolResult: content,
      };
    },
    async streamTools(model, prompt) {
      const llm = chatModel(model).bindTools([toolDef]);
      const human = new HumanMessage(prompt);
      let ai;
      let argDeltas = 0;
      for await (const chunk of await llm.stream([human])) {
        argDeltas += (chunk.tool_call_chunks ?? []).filter((c) => c.args).length;
        ai = concat(ai, chunk);
      }
      const { content, message } = toolMessage(ai);
      let final;
      for await (const chunk of await llm.stream([human, ai, message])) final = concat(final, chunk);
      const u1 = usageOf(ai);
      const u2 = usageOf(final);
      return {
        calls: callsOf(ai),
        argDeltas,
        callFinish: ai.response_metadata.finish_reason,
        text: final.content,
        finish: final.response_metadata.finish_reason,
        usage: { input: u1.input + u2.input, output: u1.output + u2.output, total: u1.total + u2.total },
        toolResult: content,
      };
    },
    async embed(model, values) {
      return embeddings(model).embedDocuments(values);
    },
    errorOf(err) {
      // The openai SDK's APIError, which LangChain rethrows with its status and code.
      return { status: err.status, code: err.code ?? err.error?.code };
    },
  };
}

{
  const common = { apiKey, maxRetries: 0 };
  const openAIConfig = (baseURL, surface) => ({ baseURL, defaultHeaders: { [surfaceHeader]: surface } });
  for (const [label, path, surface] of [
    ["langchain ChatOpenAI /v1", "/v1", "langchain/openai"],
    // Azure OpenAI's v1 surface is OpenAI-shaped: Microsoft documents the plain OpenAI client for it.
    ["langchain ChatOpenAI /openai/v1", "/openai/v1", "langchain/azure-v1"],
  ]) {
    const configuration = openAIConfig(`${gateway}${path}`, surface);
    surfaces.push(
      langchainSurface(label, {
        chatModel: (model) => new ChatOpenAI({ ...common, model, streamUsage: true, configuration }),
        embeddings: (model) => new OpenAIEmbeddings({ ...common, model, dimensions, configuration }),
      }),
    );
  }
  const azure = {
    azureOpenAIApiKey: apiKey,
    azureOpenAIBasePath: `${gateway}/openai/deployments`,
    azureOpenAIApiVersion: azureApiVersion,
    maxRetries: 0,
    configuration: { defaultHeaders: { [surfaceHeader]: "langchain/azure-deployments" } },
  };
  surfaces.push(
    langchainSurface("langchain AzureChatOpenAI /openai/deployments", {
      chatModel: (model) => new AzureChatOpenAI({ ...azure, azureOpenAIApiDeploymentName: model, streamUsage: true }),
      embeddings: (model) => new AzureOpenAIEmbeddings({ ...azure, azureOpenAIApiDeploymentName: model, dimensions }),
    }),
  );
}

// ---- The matrix -------------------------------------------------------------------------------------------

for (const s of surfaces) {
  for (const r of routes) {
    test(`${s.name} -> ${r.name}`, async (t) => {
      await t.test("chat", async () => {
        const prompt = "Say hello";
        const res = await s.chat(r.chat, prompt);
        assert.equal(res.text, `echo: ${prompt}`);
        assert.equal(res.finish, "stop");
        assert.equal(res.served, r.served, "the provider that answered");
        assertUsage(res.usage, "chat usage");
      });

      await t.test("stream with usage", async () => {
        const prompt = "Stream hello";
        const res = await s.stream(r.chat, prompt);
        assert.equal(res.text, `echo: ${prompt}`);
        assert.ok(res.deltas > 1, `streamed in pieces, got ${res.deltas}`);
        assert.equal(res.finish, "stop");
        assert.equal(res.served, r.served, "the provider that answered");
        assertUsage(res.usage, "stream usage");
      });

      const checkToolRun = (res, prompt) => {
        assert.equal(res.calls.length, 1, `one tool call, got ${JSON.stringify(res.calls)}`);
        const [call] = res.calls;
        assert.equal(call.name, toolName);
        assert.deepEqual(call.args, { text: prompt });
        assert.match(call.id, /^call_/);
        assert.match(res.callFinish, /^tool[-_]calls$/);
        assert.equal(res.toolResult, JSON.stringify(lookup(prompt)));
        assert.equal(res.text, `echo: ${res.toolResult}`, "the answer to the tool result");
        assert.equal(res.finish, "stop");
        assertUsage(res.usage, "usage of both steps");
      };

      await t.test("tool round trip", async () => {
        const prompt = "Look up Paris";
        checkToolRun(await s.tools(r.chat, prompt), prompt);
      });

      await t.test("streamed tool round trip", async () => {
        const prompt = "Look up Lisbon";
        const res = await s.streamTools(r.chat, prompt);
        checkToolRun(res, prompt);
        assert.ok(res.argDeltas > 0, "the call's arguments arrived as stream deltas");
      });

      await t.test("embeddings", async () => {
        if (r.embed === null) {
          await assert.rejects(s.embed(r.chat, ["embed me"]), (err) => {
            assert.deepEqual(s.errorOf(err), { status: 404, code: "unsupported_operation" });
            return true;
          });
          return;
        }
        assertEmbeddings(await s.embed(r.embed, ["embed me", "and me"]), "embeddings");
      });
    });
  }
}
