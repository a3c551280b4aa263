// Constrained decoding through `hearth serve` on qwen3-tools-20m (a small trained Qwen3 with the
// real tokenizer and template; it reasons first, then the grammar applies): the official openai
// package's response_format json_schema / json_object, vLLM's guided_choice / guided_regex,
// llama.cpp's grammar, forced tool calls (named and required) whose arguments must follow the
// tool's schema, strict tools under auto, the Responses API's text.format, Anthropic's
// output_format, the regex-built string keywords (pattern, format, lengths, allOf / not of
// patterns), streaming, n > 1, and the refusals (a keyword the engine cannot enforce, two
// constraints at once, a bad regex or grammar). Every reply that finishes validates with ajv.
// Sampled at temperature 1 with fixed seeds. Usage: node structured.cjs PORT SCHEMA_DIR.
const fs = require("fs");
const path = require("path");
const OpenAI = require(path.resolve(".cache/npm/node_modules/openai"));
const Ajv = require(path.resolve(".cache/npm/node_modules/ajv"));
const addFormats = require(path.resolve(".cache/npm/node_modules/ajv-formats"));
const [port, schemaDir] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0 });
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(why).slice(0, 600)}`); }
}
function validates(schema, text) {
  try {
    const v = JSON.parse(text);
    /* ajv 8 speaks draft-07+: drop draft-04's $schema and id (the fixtures name draft-04 too) */
    const { $schema, ...body } = schema;
    if (typeof body.id === "string") delete body.id;
    return ajv.validate(body, v) ? null : ajv.errors;
  } catch (e) { return String(e); }
}
const ask = (content) => [{ role: "user", content }];
const opts = { model: "qwen3-tools", temperature: 1, max_tokens: 400 };
async function post(route, body) {
  const r = await fetch(`${base}${route}`, { method: "POST", headers: { "content-type": "application/json" },
                                             body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

// A handful of the fixture schemas hearth compiles, each with a seeded sample.
async function fixtureSchemas() {
  const files = fs.readdirSync(schemaDir).filter((f) => f.endsWith(".json")).sort();
  let done = 0, finished = 0;
  for (let i = 0; i < files.length && done < 8; i += 37) {
    const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, files[i]))).schema;
    const r = await post("/v1/chat/completions", { ...opts, seed: i, messages: ask("Give me an example."),
      response_format: { type: "json_schema", json_schema: { name: "x", schema, strict: true } } });
    if (r.status === 400) { /* refused: it must say which keyword */
      check(`schema_refusal_named_${files[i]}`, /not supported|cannot|unsupported|too large/.test(r.body.error.message),
            r.body);
      continue;
    }
    done++;
    const c = r.body.choices && r.body.choices[0];
    if (c && c.finish_reason === "stop") {
      finished++;
      const bad = validates(schema, c.message.content);
      check(`schema_reply_valid_${files[i]}`, bad === null, { bad, text: c.message.content });
    } else {
      check(`schema_reply_${files[i]}`, c && c.finish_reason === "length", r.body);
    }
  }
  check("schemas_some_finished", done >= 4 && finished >= 2, { done, finished });
}

async function simpleFormats() {
  const person = { type: "object", properties: { name: { type: "string", maxLength: 20 },
                   age: { type: "integer", minimum: 0, maximum: 120 } }, required: ["name", "age"],
                   additionalProperties: false };
  const r = await client.chat.completions.create({ ...opts, seed: 1, messages: ask("Describe a person."),
    response_format: { type: "json_schema", json_schema: { name: "person", schema: person, strict: true } } });
  const c = r.choices[0];
  check("json_schema_person", c.finish_reason === "stop" && validates(person, c.message.content) === null, c);
  const o = await client.chat.completions.create({ ...opts, seed: 2, messages: ask("Any JSON object."),
                                                   response_format: { type: "json_object" } });
  let obj = null;
  try { obj = JSON.parse(o.choices[0].message.content); } catch (e) { obj = null; }
  check("json_object", o.choices[0].finish_reason !== "stop" || (obj && typeof obj === "object" && !Array.isArray(obj)),
        o.choices[0]);
  const ch = await post("/v1/chat/completions", { ...opts, seed: 3, messages: ask("Pick a color."),
                                                  guided_choice: ["red", "green", "blue"] });
  check("guided_choice", ["red", "green", "blue"].includes(ch.body.choices[0].message.content.trim()), ch.body);
  const re = await post("/v1/chat/completions", { ...opts, seed: 4, messages: ask("A code."),
                                                  guided_regex: "[0-9]{3}-[a-z]{2}" });
  check("guided_regex", /^[0-9]{3}-[a-z]{2}$/.test(re.body.choices[0].message.content.trim()), re.body);
  const g = await post("/v1/completions", { model: "m", prompt: "Is the sky blue? Answer:", max_tokens: 10,
                                            seed: 5, temperature: 1, grammar: 'root ::= " yes" | " no"' });
  check("gbnf_completion", [" yes", " no"].includes(g.body.choices[0].text), g.body);
  const s = await client.chat.completions.create({ ...opts, seed: 6, stream: true, messages: ask("A person."),
    response_format: { type: "json_schema", json_schema: { name: "p", schema: person } } });
  let text = "", fin = null;
  for await (const ev of s) {
    if (ev.choices[0]) { text += ev.choices[0].delta.content || ""; fin = ev.choices[0].finish_reason || fin; }
  }
  check("json_schema_stream", fin === "stop" && validates(person, text) === null, { fin, text });
  const n = await client.chat.completions.create({ ...opts, seed: 7, n: 3, messages: ask("People."),
    response_format: { type: "json_schema", json_schema: { name: "p", schema: person } } });
  check("json_schema_n3", n.choices.length === 3 &&
        n.choices.every((c) => c.finish_reason !== "stop" || validates(person, c.message.content) === null), n.choices);
}

/* The regex-built string keywords: pattern, format, pattern with length bounds, allOf of two
 * patterns (their intersection) and not of a pattern (its complement), each checked by ajv. */
async function patternSchemas() {
  const codes = { type: "object", properties: {
    code: { type: "string", pattern: "^[A-Z]{2}-[0-9]{3}$" },
    tag: { type: "string", pattern: "^[a-z]+$", minLength: 3, maxLength: 8 },
    word: { type: "string", allOf: [{ pattern: "^[a-z]{2,6}$" }, { pattern: "e" }] },
    other: { type: "string", pattern: "^[a-z]{1,5}$", not: { pattern: "^a" } },
    day: { type: "string", format: "date" } },
    required: ["code", "tag", "word", "other", "day"], additionalProperties: false };
  for (let seed = 11; seed < 14; seed++) {
    const r = await client.chat.completions.create({ ...opts, seed, messages: ask("A record."),
      response_format: { type: "json_schema", json_schema: { name: "rec", schema: codes, strict: true } } });
    const c = r.choices[0];
    check(`json_schema_patterns_${seed}`, c.finish_reason === "stop" && validates(codes, c.message.content) === null,
          { c, why: validates(codes, c.message.content) });
  }
}

const weather = { type: "function", function: { name: "get_weather", description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string", minLength: 1, maxLength: 24 },
                days: { type: "integer", minimum: 1, maximum: 7 } }, required: ["city", "days"],
                additionalProperties: false } } };
const time = { type: "function", function: { name: "get_time", description: "Local time of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };

async function toolCalls() {
  const named = await client.chat.completions.create({ ...opts, seed: 8, messages: ask("Hello there!"),
    tools: [weather, time], tool_choice: { type: "function", function: { name: "get_weather" } } });
  const tc = named.choices[0].message.tool_calls || [];
  check("forced_named_call", tc.length === 1 && tc[0].function.name === "get_weather" &&
        validates(weather.function.parameters, tc[0].function.arguments) === null, named.choices[0]);
  for (let seed = 9; seed < 12; seed++) {
    const req = await client.chat.completions.create({ ...opts, seed, messages: ask("Good morning."),
                                                       tools: [weather, time], tool_choice: "required" });
    const calls = req.choices[0].message.tool_calls || [];
    const schemaOf = (nm) => (nm === "get_weather" ? weather : time).function.parameters;
    check(`forced_required_calls_${seed}`, calls.length >= 1 &&
          calls.every((c) => validates(schemaOf(c.function.name), c.function.arguments) === null) &&
          !(req.choices[0].message.content || "").includes("<tool_call>"), req.choices[0]);
  }
  const strict = { type: "function", function: { ...weather.function, strict: true } };
  const auto = await client.chat.completions.create({ ...opts, seed: 12, messages: ask("What's the weather in Oslo?"),
                                                      tools: [strict] });
  const ac = auto.choices[0].message.tool_calls || [];
  check("strict_auto", ac.every((c) => validates(weather.function.parameters, c.function.arguments) === null),
        auto.choices[0]);
  const an = await post("/v1/messages", { model: "m", max_tokens: 300, temperature: 1,
    messages: ask("Weather?"), tool_choice: { type: "any" },
    tools: [{ name: "get_weather", description: "Weather", input_schema: weather.function.parameters }] });
  const use = (an.body.content || []).filter((b) => b.type === "tool_use");
  check("anthropic_forced_any", use.length >= 1 && ajv.validate(weather.function.parameters, use[0].input), an.body);
}

async function otherApis() {
  const item = { type: "object", properties: { title: { type: "string", maxLength: 30 },
                 tags: { type: "array", items: { type: "string", maxLength: 10 }, maxItems: 3 } },
                 required: ["title", "tags"], additionalProperties: false };
  const r = await client.responses.create({ model: "m", temperature: 1, max_output_tokens: 400, input: "An item.",
    text: { format: { type: "json_schema", name: "item", schema: item, strict: true } } });
  check("responses_text_format", r.status !== "completed" || validates(item, r.output_text) === null, r.output);
  const a = await post("/v1/messages", { model: "m", max_tokens: 400, temperature: 1, messages: ask("An item."),
                                         output_format: { type: "json_schema", schema: item } });
  const text = (a.body.content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
  check("anthropic_output_format", a.body.stop_reason !== "end_turn" || validates(item, text) === null, a.body);
}

async function refusals() {
  const uniq = await post("/v1/chat/completions", { ...opts, messages: ask("x"), response_format:
    { type: "json_schema", json_schema: { name: "u", schema: { type: "object", if: { minimum: 2 }, then: { required: ["a"] } } } } });
  check("refuse_unsupported_keyword", uniq.status === 400 && /"if"/.test(uniq.body.error.message), uniq.body);
  const two = await post("/v1/chat/completions", { ...opts, messages: ask("x"), guided_regex: "a",
                                                   response_format: { type: "json_object" } });
  check("refuse_two_constraints", two.status === 400 && /both/.test(two.body.error.message), two.body);
  const re = await post("/v1/chat/completions", { ...opts, messages: ask("x"), guided_regex: "(a" });
  check("refuse_bad_regex", re.status === 400 && /guided_regex/.test(re.body.error.message), re.body);
  const gb = await post("/v1/chat/completions", { ...opts, messages: ask("x"), grammar: "root ::= (" });
  check("refuse_bad_grammar", gb.status === 400 && /grammar/.test(gb.body.error.message), gb.body);
  const ty = await post("/v1/chat/completions", { ...opts, messages: ask("x"), response_format: { type: "yaml" } });
  check("refuse_unknown_format", ty.status === 400 && /response_format/.test(ty.body.error.message), ty.body);
}

(async () => {
  try {
    await simpleFormats();
    await patternSchemas();
    await toolCalls();
    await otherApis();
    await refusals();
    await fixtureSchemas();
  } catch (e) {
    check("no_exception", false, String(e.stack || e));
  }
  process.exit(failed ? 1 : 0);
})();
