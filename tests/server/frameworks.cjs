// Structured output and tool calls through the agent frameworks people build on, against
// `hearth serve` on qwen3-tools-20m: the Vercel AI SDK (@ai-sdk/openai-compatible with
// structured outputs: generateText/streamText with Output.object, tools with toolChoice
// "required"), LangChain (ChatOpenAI.withStructuredOutput by json_schema and by function
// calling, bindTools with tool_choice "any", a structured stream) and the OpenAI Agents SDK
// (an Agent with a zod outputType over the Responses and the Chat Completions APIs, and a
// function tool). Each answer is parsed and checked against its zod schema by the framework
// itself (a parse failure throws); the checks here re-validate with zod and look at the tool
// names. The model reasons before it answers (rarely for hundreds of tokens): max tokens are
// generous so that a reply is cut only by the grammar's end. Usage: node frameworks.cjs PORT (from the repository root, after sdk_npm.sh installed
// the pinned packages).
const path = require("path");
const mod = (name) => require(path.resolve(".cache/npm/node_modules", name));
const { generateText, streamText, Output, tool, stepCountIs } = mod("ai");
const { createOpenAICompatible } = mod("@ai-sdk/openai-compatible");
const { z } = mod("zod");
const { ChatOpenAI } = mod("@langchain/openai");
const agents = mod("@openai/agents");
const OpenAI = mod("openai");
globalThis.AI_SDK_LOG_WARNINGS = false;
const [port] = process.argv.slice(2);
const baseURL = `http://127.0.0.1:${port}/v1`;
const model = "qwen3-tools";
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 600)}`); }
}
async function attempt(name, fn) {
  try { await fn(); } catch (e) { check(name, false, String(e.stack || e)); }
}
const person = z.object({ name: z.string().max(20), age: z.number().int().min(0).max(120) });
const valid = (schema, v) => schema.safeParse(v).success;
const weatherArgs = z.object({ city: z.string().min(1).max(24), days: z.number().int().min(1).max(7) });

async function aiSdk() {
  const hearth = createOpenAICompatible({ name: "hearth", baseURL, supportsStructuredOutputs: true });
  const opts = { model: hearth(model), temperature: 1, maxOutputTokens: 1000, maxRetries: 0 };
  await attempt("ai_sdk_output_object", async () => {
    const r = await generateText({ ...opts, seed: 1, prompt: "Describe a person.", output: Output.object({ schema: person }) });
    check("ai_sdk_output_object", r.finishReason === "stop" && valid(person, r.output), r.output);
  });
  await attempt("ai_sdk_stream_object", async () => {
    const s = streamText({ ...opts, seed: 3, prompt: "A person.", output: Output.object({ schema: person }) });
    let partials = 0;
    for await (const p of s.partialOutputStream) partials += p ? 1 : 0;
    const out = await s.output;
    check("ai_sdk_stream_object", partials >= 2 && valid(person, out) && (await s.finishReason) === "stop",
          { partials, out });
  });
  await attempt("ai_sdk_tool_required", async () => {
    const seen = [];
    const r = await generateText({ ...opts, seed: 4, prompt: "Weather in Oslo?", toolChoice: "required",
      stopWhen: stepCountIs(1), tools: { get_weather: tool({ description: "Weather of a city", inputSchema: weatherArgs,
        execute: async (a) => { seen.push(a); return { forecast: "sun" }; } }) } });
    check("ai_sdk_tool_required", r.toolCalls.length >= 1 && r.toolCalls.every((c) => c.toolName === "get_weather") &&
          seen.length === r.toolCalls.length && seen.every((a) => valid(weatherArgs, a)), r.toolCalls);
  });
}

async function langchain() {
  const llm = new ChatOpenAI({ model, apiKey: "none", temperature: 1, maxTokens: 1000, maxRetries: 0,
                               configuration: { baseURL } });
  for (const method of ["jsonSchema", "functionCalling"]) {
    await attempt(`langchain_structured_${method}`, async () => {
      const r = await llm.withStructuredOutput(person, { method, name: "person" }).invoke("Describe a person.");
      check(`langchain_structured_${method}`, valid(person, r), r);
    });
  }
  await attempt("langchain_structured_stream", async () => {
    let chunks = 0, last = null;
    for await (const c of await llm.withStructuredOutput(person, { method: "jsonSchema" }).stream("A person.")) {
      chunks++;
      last = c;
    }
    check("langchain_structured_stream", chunks >= 1 && valid(person, last), { chunks, last });
  });
  await attempt("langchain_bind_tools_any", async () => {
    const params = { type: "object", properties: { city: { type: "string", minLength: 1, maxLength: 24 } },
                     required: ["city"], additionalProperties: false };
    const m = await llm.bindTools([{ type: "function", function: { name: "get_weather", description: "Weather",
                                                                   parameters: params } }],
                                  { tool_choice: "any" }).invoke("Weather?");
    const calls = m.tool_calls || [];
    check("langchain_bind_tools_any", calls.length >= 1 && calls.every((c) => c.name === "get_weather" &&
          typeof c.args.city === "string" && c.args.city.length >= 1 && c.args.city.length <= 24), calls);
  });
}

async function openaiAgents() {
  agents.setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: "none", maxRetries: 0 }));
  agents.setTracingDisabled(true);
  for (const api of ["responses", "chat_completions"]) {
    agents.setOpenAIAPI(api);
    await attempt(`agents_output_type_${api}`, async () => {
      const agent = new agents.Agent({ name: "people", instructions: "Answer with a person.", model,
                                       outputType: person, modelSettings: { temperature: 1, maxTokens: 1000 } });
      const r = await agents.run(agent, "Describe a person.");
      check(`agents_output_type_${api}`, valid(person, r.finalOutput), r.finalOutput);
    });
    await attempt(`agents_tool_${api}`, async () => {
      const seen = [];
      const getWeather = agents.tool({ name: "get_weather", description: "Weather of a city", parameters: weatherArgs,
                                       execute: async (a) => { seen.push(a); return "sunny"; } });
      const agent = new agents.Agent({ name: "weather", instructions: "Use the tool.", model, tools: [getWeather],
                                       toolUseBehavior: "stop_on_first_tool",
                                       modelSettings: { temperature: 1, maxTokens: 1000, toolChoice: "required" } });
      const r = await agents.run(agent, "Weather in Oslo?");
      check(`agents_tool_${api}`, seen.length >= 1 && seen.every((a) => valid(weatherArgs, a)) &&
            r.finalOutput === "sunny", { seen, out: r.finalOutput });
    });
  }
}

(async () => {
  await aiSdk();
  await langchain();
  await openaiAgents();
  process.exit(failed ? 1 : 0);
})();
