// Vercel AI SDK (ai + @ai-sdk/openai-compatible, i.e. Chat Completions) against hearth:
// generateText with an executed tool over several steps, and streamText of a greeting.
import { BASE, MODEL, KEY, need, check, step, done, OSLO, WEATHER_DESC, weatherResult, sentence } from "./sdk_lib.mjs";

const { generateText, streamText, tool, stepCountIs } = await need("ai");
const { createOpenAICompatible } = await need("@ai-sdk/openai-compatible");
const { z } = await need("zod");

const hearth = createOpenAICompatible({ name: "hearth", baseURL: BASE, apiKey: KEY, includeUsage: true });
const model = hearth(MODEL);
const usageOk = (u) => u && u.inputTokens > 0 && u.outputTokens > 0 && u.totalTokens >= u.inputTokens + u.outputTokens;

await step("vercel_ai_generate_tool", async () => {
  const calls = [];
  const r = await generateText({
    model, temperature: 0, maxRetries: 0, prompt: OSLO, stopWhen: stepCountIs(3),
    tools: { get_weather: tool({ description: WEATHER_DESC, inputSchema: z.object({ city: z.string() }),
                                 execute: async ({ city }) => { calls.push(city); return weatherResult(city); } }) },
  });
  check("vercel_ai_generate_tool", calls.join() === "Oslo" && r.steps.length === 2 &&
        r.steps[0].finishReason === "tool-calls", { calls, steps: r.steps.map((s) => s.finishReason) });
  check("vercel_ai_generate_text", sentence(r.text) && r.finishReason === "stop", { text: r.text, finish: r.finishReason });
  // Qwen3 thinks first: the server's reasoning_content comes back as the step's reasoning
  check("vercel_ai_generate_reasoning", /get_weather/.test(r.steps[0].reasoningText || ""),
        { reasoning: r.steps[0].reasoningText });
  // ai 7: result.usage is the sum over the steps, each step has its own
  const sum = (k) => r.steps.reduce((a, s) => a + (s.usage[k] || 0), 0);
  check("vercel_ai_generate_usage", r.steps.every((s) => usageOk(s.usage)) && usageOk(r.usage) &&
        r.usage.inputTokens === sum("inputTokens") && r.usage.outputTokens === sum("outputTokens"),
        { usage: r.usage, steps: r.steps.map((s) => s.usage) });
});

await step("vercel_ai_stream", async () => {
  const r = streamText({ model, temperature: 0, maxRetries: 0, prompt: "Hello!",
                         onError: ({ error }) => { throw error; } });
  let text = "", parts = 0;
  for await (const d of r.textStream) { text += d; parts++; }
  const [finish, usage, full] = [await r.finishReason, await r.usage, await r.text];
  check("vercel_ai_stream_text", text.trim().length > 0 && parts > 1 && full === text, { text, parts });
  check("vercel_ai_stream_finish", finish === "stop", { finish });
  check("vercel_ai_stream_usage", usageOk(usage), { usage });
});
done();
