// @openai/agents against hearth: an Agent with a get_weather function tool, run on the default
// (Responses API) model path, on the Chat Completions path, and streamed.
import { BASE, MODEL, KEY, need, check, step, done, OSLO, WEATHER_DESC, weatherResult, sentence } from "./sdk_lib.mjs";

const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = await need("@openai/agents");
const { default: OpenAI } = await need("openai");
const { z } = await need("zod");

setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: BASE, apiKey: KEY, maxRetries: 0 }));

function makeAgent(calls) {
  const getWeather = tool({
    name: "get_weather",
    description: WEATHER_DESC,
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => { calls.push(city); return weatherResult(city); },
  });
  return new Agent({ name: "Assistant", instructions: "You are a helpful assistant.", model: MODEL,
                     tools: [getWeather], modelSettings: { temperature: 0 } });
}

const toolItems = (r) => r.newItems.filter((i) => i.type === "tool_call_item");

for (const api of ["responses", "chat_completions"]) {
  setOpenAIAPI(api);
  const name = `openai_agents_${api}`;
  await step(name, async () => {
    const calls = [];
    const r = await run(makeAgent(calls), OSLO);
    const ti = toolItems(r);
    check(`${name}_tool_call`, calls.join() === "Oslo" && ti.length === 1 && ti[0].rawItem.name === "get_weather",
          { calls, items: r.newItems.map((i) => i.type) });
    check(`${name}_final_output`, sentence(r.finalOutput), { finalOutput: r.finalOutput });
  });
  await step(`${name}_stream`, async () => {
    const calls = [];
    const s = await run(makeAgent(calls), OSLO, { stream: true });
    let text = "";
    for await (const chunk of s.toTextStream()) text += chunk;
    await s.completed;
    check(`${name}_stream`, !s.error && calls.join() === "Oslo" && sentence(text) && s.finalOutput === text,
          { calls, text, finalOutput: s.finalOutput, error: s.error && String(s.error) });
  });
}
done();
