// End-to-end tests of the OpenAI Agents SDK for JavaScript (@openai/agents) through the local gateway to the
// strict mock providers. e2e/agents_test.go (TestAgentsSDK) starts the stack and runs `node --test` with
// GATEWAY_URL and AGENT_TARGETS (the model name of each provider dialect) set.
//
// The mocks script the model (e2e/mock/scripted.go): a line "mock-call NAME PAYLOAD" in the user's message makes
// the answer call the tool NAME with PAYLOAD, "mock-answer TEXT" makes TEXT the answer; after a tool's output
// the answer is "echo: <output>". So each run below takes a real tool turn, then a turn using its result.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AzureOpenAI } from "openai";
import {
  Agent,
  OpenAIChatCompletionsModel,
  OpenAIResponsesModel,
  UserError,
  run,
  setTracingDisabled,
  tool,
  toolNamespace,
} from "@openai/agents";
import { z } from "zod";

// Nothing goes to api.openai.com.
setTracingDisabled(true);

const gateway = process.env.GATEWAY_URL;
assert.ok(gateway, "GATEWAY_URL must point at the local gateway");
const targets = JSON.parse(process.env.AGENT_TARGETS ?? "[]");
assert.ok(targets.length > 0, "AGENT_TARGETS must list the provider dialects' models");

// Each request names its target, so that the Go side can tell which mock got what.
const targetHeader = "x-e2e-agents";

const clients = {
  OpenAI: (target) =>
    new OpenAI({
      baseURL: `${gateway}/v1`,
      apiKey: "client-key",
      maxRetries: 0,
      defaultHeaders: { [targetHeader]: target.name },
    }),
  // Chat on /openai/deployments/{model}/chat/completions, Responses on /openai/responses, both with api-version.
  AzureOpenAI: (target) =>
    new AzureOpenAI({
      endpoint: gateway,
      apiKey: "client-key",
      apiVersion: "2025-04-01-preview",
      maxRetries: 0,
      defaultHeaders: { [targetHeader]: target.name },
    }),
};

const modes = {
  responses: (client, model) => new OpenAIResponsesModel(client, model),
  chat_completions: (client, model) => new OpenAIChatCompletionsModel(client, model),
};

const weatherCalls = [];
const getWeather = tool({
  name: "get_weather",
  description: "The weather in a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    weatherCalls.push(city);
    return `sunny in ${city}`;
  },
});

const lookupCustomer = tool({
  name: "lookup_customer",
  description: "Look up a customer.",
  parameters: z.object({ customerId: z.string() }),
  execute: async ({ customerId }) => `customer ${customerId}: Ada`,
});

const crm = toolNamespace({ name: "crm", description: "CRM tools.", tools: [lookupCustomer] });

const Weather = z.object({ city: z.string(), temperature: z.number() });

for (const target of targets) {
  for (const [clientName, makeClient] of Object.entries(clients)) {
    for (const [mode, makeModel] of Object.entries(modes)) {
      describe(`${target.name} / ${clientName} / ${mode}`, () => {
        const model = makeModel(makeClient(target), target.model);

        test("a tool run to completion", async () => {
          const agent = new Agent({ name: "weather", instructions: "Use the tools.", model, tools: [getWeather] });
          const before = weatherCalls.length;
          const result = await run(agent, 'mock-call get_weather {"city":"Paris"}');
          assert.deepEqual(weatherCalls.slice(before), ["Paris"]);
          assert.equal(result.finalOutput, "echo: sunny in Paris");
        });

        test("a streamed run", async () => {
          const agent = new Agent({ name: "weather", instructions: "Use the tools.", model, tools: [getWeather] });
          const result = await run(agent, 'mock-call get_weather {"city":"Rome"}', { stream: true });
          let deltas = "";
          for await (const event of result) {
            if (event.type === "raw_model_stream_event" && event.data.type === "output_text_delta") {
              deltas += event.data.delta;
            }
          }
          await result.completed;
          assert.equal(result.finalOutput, "echo: sunny in Rome");
          assert.equal(deltas, "echo: sunny in Rome");
        });

        test("structured output", async () => {
          const agent = new Agent({ name: "reporter", instructions: "Answer in JSON.", model, outputType: Weather });
          const result = await run(agent, 'mock-answer {"city":"Paris","temperature":21}');
          assert.deepEqual(result.finalOutput, { city: "Paris", temperature: 21 });
        });

        test("a toolNamespace tool", async () => {
          const agent = new Agent({ name: "crm", instructions: "Use the tools.", model, tools: [...crm] });
          const input = 'mock-call lookup_customer {"customerId":"42"}';
          if (mode === "chat_completions") {
            // The SDK refuses namespaces itself in chat-completions mode, before any request.
            await assert.rejects(run(agent, input), (err) => {
              assert.ok(err instanceof UserError, `want a UserError, got ${err}`);
              assert.match(err.message, /only supported with the Responses API/);
              return true;
            });
            return;
          }
          const result = await run(agent, input);
          assert.equal(result.finalOutput, "echo: customer 42: Ada");
        });
      });
    }
  }
}
