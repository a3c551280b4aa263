// @langchain/openai against hearth: ChatOpenAI with bound tools (Chat Completions), a
// ToolMessage round trip, a streamed greeting, and one tool invoke over the Responses API.
import { BASE, MODEL, KEY, need, check, step, done, OSLO, WEATHER_DESC, weatherResult, sentence } from "./sdk_lib.mjs";

const { ChatOpenAI } = await need("@langchain/openai");
const { HumanMessage, ToolMessage } = await need("@langchain/core/messages");

const weather = { type: "function", function: { name: "get_weather", description: WEATHER_DESC,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };
const opts = { model: MODEL, apiKey: KEY, temperature: 0, maxRetries: 0, configuration: { baseURL: BASE } };
const textOf = (m) => (typeof m.content === "string" ? m.content
  : (m.content || []).filter((b) => b.type === "text").map((b) => b.text).join(""));
const osloCall = (m) => (m.tool_calls || []).length === 1 && m.tool_calls[0].name === "get_weather" &&
  m.tool_calls[0].args.city === "Oslo" && !!m.tool_calls[0].id;

await step("langchain_chat_tools", async () => {
  const llm = new ChatOpenAI(opts).bindTools([weather]);
  const human = new HumanMessage(OSLO);
  const ai = await llm.invoke([human]);
  check("langchain_chat_tool_call", osloCall(ai), { tool_calls: ai.tool_calls, content: ai.content });
  check("langchain_chat_usage", ai.usage_metadata && ai.usage_metadata.input_tokens > 0 &&
        ai.usage_metadata.output_tokens > 0, ai.usage_metadata);
  const tc = ai.tool_calls[0];
  const ans = await llm.invoke([human, ai, new ToolMessage({ tool_call_id: tc.id, content: weatherResult("Oslo") })]);
  check("langchain_chat_tool_answer", sentence(textOf(ans)) && !(ans.tool_calls || []).length,
        { content: ans.content, tool_calls: ans.tool_calls });
});

await step("langchain_stream", async () => {
  const llm = new ChatOpenAI(opts);
  let text = "", n = 0, usage;
  for await (const c of await llm.stream("Hello!")) { text += textOf(c); n++; if (c.usage_metadata) usage = c.usage_metadata; }
  check("langchain_stream", text.trim().length > 0 && n > 1, { text, chunks: n });
  check("langchain_stream_usage", usage && usage.output_tokens > 0, usage);
});

await step("langchain_responses", async () => {
  const llm = new ChatOpenAI({ ...opts, useResponsesApi: true }).bindTools([weather]);
  const human = new HumanMessage(OSLO);
  const ai = await llm.invoke([human]);
  check("langchain_responses_tool_call", osloCall(ai), { tool_calls: ai.tool_calls, content: ai.content });
  const tc = ai.tool_calls[0];
  if (!tc) return;
  const ans = await llm.invoke([human, ai, new ToolMessage({ tool_call_id: tc.id, content: weatherResult("Oslo") })]);
  check("langchain_responses_tool_answer", sentence(textOf(ans)) && !(ans.tool_calls || []).length,
        { content: ans.content, tool_calls: ans.tool_calls });
});
done();
