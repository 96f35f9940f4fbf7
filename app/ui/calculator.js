// The dpcal calculator: a form built from GET /v1/algorithms/{id}, answers from /v1/calibrate or /v1/privacy on
// input (debounced), plots, a verification job, copy-as-code, and the state in the URL. Same-origin requests only.

import { lineChart } from "./plot.js";

const $ = (selector) => document.querySelector(selector);
const form = $("#form");
let detail = null;          // GET /v1/algorithms/{id}
let controller = null;      // aborts the computations of the previous input
let timer = null;
let lastRequest = null;     // {path, body} of the last answer

async function api(path, body, signal) {
  const init = body === undefined ? { signal } : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal,
  };
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw Object.assign(new Error(data.detail || response.statusText), { problem: data });
  return data;
}

const fmt = (value, digits = 5) =>
  value === null || value === undefined ? "—" : Number.isFinite(value) ? Number(value).toPrecision(digits) : String(value);

function text(tag, content, attributes = {}) {
  const node = document.createElement(tag);
  node.textContent = content;
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  return node;
}

// -- the form -----------------------------------------------------------------------------------------------------

function options(property) {
  const variants = property.anyOf || [property];
  const enumerated = variants.find((v) => v.enum);
  if (enumerated) return enumerated.enum;
  if (variants.some((v) => v.type === "boolean")) return [true, false];
  return null;
}

/** Objects and arrays (e.g. dp-mf's strategy): edited as JSON text. */
function isStructured(property) {
  const variants = property.oneOf || property.anyOf || [property];
  return variants.some((v) => v.$ref || v.type === "object" || v.type === "array");
}

const shown = (value) => (typeof value === "object" ? JSON.stringify(value) : String(value));

function isNumeric(property) {
  return (property.anyOf || [property]).some((v) => v.type === "number" || v.type === "integer");
}

/** Knobs: what calibration solves for (the privacy example's fields that the calibration example leaves out). */
function knobs() {
  const given = new Set(Object.keys(detail.examples.calibrate));
  return new Set([detail.calibrated_parameter, ...Object.keys(detail.examples.privacy).filter((k) => !given.has(k))]);
}

function buildFields(values) {
  const container = $("#fields");
  container.replaceChildren();
  const properties = detail.parameters.properties;
  for (const [name, property] of Object.entries(properties)) {
    const row = document.createElement("div");
    row.className = "row";
    row.dataset.field = name;
    const id = `param-${name}`;
    const symbol = property["x-symbol"] ? ` (${property["x-symbol"]})` : "";
    row.append(text("label", `${name}${symbol}`, { for: id }));
    const choices = options(property);
    let input;
    if (choices) {
      input = document.createElement("select");
      input.append(text("option", "—", { value: "" }));
      for (const choice of choices) input.append(text("option", String(choice), { value: String(choice) }));
    } else {
      input = document.createElement("input");
      if (isNumeric(property)) input.setAttribute("inputmode", "decimal");
    }
    input.id = id;
    input.name = name;
    input.dataset.param = name;
    input.setAttribute("aria-describedby", `${id}-hint`);
    const value = values[name];
    input.value = value === undefined || value === null ? "" : shown(value);
    const unit = property["x-unit"] ? `${property["x-unit"]}. ` : "";
    row.append(input, text("span", unit + (property.description || ""), { id: `${id}-hint`, class: "hint" }));
    container.append(row);
  }
  showKnobs();
}

function showKnobs() {
  const calibrating = mode() === "calibrate";
  const hidden = knobs();
  for (const row of document.querySelectorAll("#fields .row")) row.hidden = calibrating && hidden.has(row.dataset.field);
  $("#epsilon-row").hidden = !calibrating;
}

const mode = () => form.elements.mode.value;

function params() {
  const out = {};
  const hidden = mode() === "calibrate" ? knobs() : new Set();
  for (const input of document.querySelectorAll("[data-param]")) {
    const name = input.dataset.param;
    const raw = input.value.trim();
    if (raw === "" || hidden.has(name)) continue;
    const property = detail.parameters.properties[name];
    if (isStructured(property)) out[name] = parsedOr(raw);
    else if (raw === "true" || raw === "false") out[name] = raw === "true";
    else if (isNumeric(property) && raw !== "" && Number.isFinite(Number(raw))) out[name] = Number(raw);
    else out[name] = raw; // the service names the field and the rule if it is not valid
  }
  return out;
}

function parsedOr(raw) {
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // the service names the field and the rule
  }
}

function request() {
  const delta = Number($("#delta").value);
  const accountant = $("#accountant").value;
  const body = { algorithm: detail.id, params: params(), delta, accountant };
  if (mode() === "calibrate") return { path: "/v1/calibrate", body: { ...body, target_epsilon: Number($("#target_epsilon").value) } };
  return { path: "/v1/privacy", body };
}

// -- state in the URL ---------------------------------------------------------------------------------------------

function saveState() {
  const query = new URLSearchParams({
    algorithm: detail.id, mode: mode(), delta: $("#delta").value, accountant: $("#accountant").value,
  });
  if (mode() === "calibrate") query.set("target_epsilon", $("#target_epsilon").value);
  for (const [name, value] of Object.entries(params())) query.set(`p.${name}`, shown(value));
  history.replaceState(null, "", `${location.pathname}?${query}`);
}

function urlState() {
  const query = new URLSearchParams(location.search);
  const values = {};
  for (const [key, value] of query) if (key.startsWith("p.")) values[key.slice(2)] = value;
  return { query, values: Object.keys(values).length ? values : null };
}

// -- answers ------------------------------------------------------------------------------------------------------

function renderAnswer(answer, calibrating) {
  $("#problem").hidden = true;
  const value = calibrating ? answer.calibrated_value : answer.epsilon;
  $("#answer-label").textContent = calibrating
    ? `${answer.calibrated_parameter} for ε = ${fmt(answer.target_epsilon, 4)}, δ = ${answer.delta} (${answer.accountant}):`
    : `ε at δ = ${answer.delta} (${answer.accountant}):`;
  const output = $("#answer-value");
  output.textContent = fmt(value);
  output.title = String(value);
  const rows = answer.accountants.map((a) => {
    const tr = document.createElement("tr");
    const epsilon = a.epsilon_lower === null || a.epsilon_lower === undefined ? fmt(a.epsilon)
      : `${fmt(a.epsilon)} (exact ≥ ${fmt(a.epsilon_lower)})`;
    tr.append(text("th", a.name, { scope: "row" }), text("td", epsilon), text("td", fmt(a.calibrated_value)),
      text("td", a.guarantee || (a.applicable ? "" : "not applicable")), text("td", a.applicable ? a.method || "" : a.reason || ""));
    return tr;
  });
  $("#accountants tbody").replaceChildren(...rows);
  const dl = $("#conventions");
  dl.replaceChildren();
  const conventions = { ...answer.conventions, noise: answer.noise ? answer.noise.sensitivity_rule : undefined };
  for (const [key, item] of Object.entries(conventions)) {
    if (item === undefined || item === null) continue;
    dl.append(text("dt", key.replaceAll("_", " ")), text("dd", String(item)));
  }
  const paper = answer.paper;
  const claim = answer.accountants.find((a) => a.name === "paper" && a.applicable);
  $("#paper").textContent = paper && paper.epsilon_claimed !== null
    ? `${paper.source}: claims ε = ${fmt(paper.epsilon_claimed, 4)} for its noise ${fmt(paper.noise_multiplier, 4)}; dpcal certifies ε = ${fmt(paper.epsilon_certified, 4)} (${paper.valid ? "valid" : "not valid"}).`
    : claim ? `The paper's statement: ε = ${fmt(claim.epsilon, 4)} (${claim.guarantee}); certified: ε = ${fmt(answer.epsilon, 4)}.`
      : answer.paper_reason || "No paper calibration for this algorithm.";
  $("#warnings").replaceChildren(...(answer.warnings.length ? answer.warnings : ["none"]).map((w) => text("li", w)));
}

function renderProblem(error) {
  const box = $("#problem");
  box.hidden = false;
  const fields = (error.problem && error.problem.errors) || [];
  // one message per problem: each field's own, or the detail where no field is named (the detail repeats them)
  const lines = fields.length
    ? fields.map((f) => `${f.loc.join(".")}: ${f.message}${f.allowed ? ` (allowed: ${f.allowed})` : ""}`)
    : [error.message];
  box.replaceChildren(...lines.map((line) => text("p", line)));
  $("#status").textContent = "The service refused this input.";
}

// -- plots --------------------------------------------------------------------------------------------------------

function noiseOf(answer) {
  return answer.calibrated_value !== undefined ? { [answer.calibrated_parameter]: answer.calibrated_value } : {};
}

async function plotTraining(answer, body, signal) {
  const box = $("#plot-training .plot");
  if (!detail.checkpoints) {
    caption("#plot-training", "ε over training");
    lineChart(box, { title: "ε over training", description: `ε over training is offered for dp-sgd and /v1/compose, not ${detail.id}`, series: [], x: "epochs", y: "ε" });
    return;
  }
  const p = { ...body.params, ...noiseOf(answer) };
  const checkpoints = p.epochs !== undefined ? "epochs" : { every: Math.max(1, Math.ceil((answer.conventions.steps || 1) / 60)) };
  // drawn by the accountant of the headline, so the curve ends at the headline's ε
  const accountant = answer.accountant;
  const curve = await api("/v1/privacy", { algorithm: detail.id, params: p, delta: body.delta, accountant, checkpoints }, signal);
  const points = curve.curve.map((c) => [c.epochs ?? c.steps, c.epsilon]);
  box.dataset.finalEpsilon = String(points.at(-1)[1]);
  caption("#plot-training", `ε over training (${accountant} accountant)`);
  lineChart(box, {
    title: `ε over training (${accountant} accountant)`,
    description: `ε after each checkpoint at δ = ${body.delta}; final ε ${fmt(points.at(-1)[1], 4)}`,
    series: [{ label: accountant, points }], x: curve.curve[0].epochs !== null ? "epochs" : "steps", y: `ε (δ = ${body.delta})`,
  });
}

async function plotSweep(answer, body, signal) {
  const target = body.target_epsilon ?? answer.epsilon;
  const calibrationParams = Object.fromEntries(Object.entries(body.params).filter(([k]) => !knobs().has(k)));
  const sweep = [];
  for (const factor of [0.25, 0.5, 1, 2, 4]) {
    const e = target * factor;
    try {
      sweep.push([e, await api("/v1/calibrate", { algorithm: detail.id, params: calibrationParams, target_epsilon: e, delta: body.delta, accountant: "rdp" }, signal)]);
    } catch (error) {
      if (error.name === "AbortError") throw error;
    }
  }
  const parameter = detail.calibrated_parameter;
  lineChart($("#plot-tradeoff .plot"), {
    title: `${parameter} against ε`, description: `the ${parameter} the rdp accountant needs for each ε at δ = ${body.delta}`,
    series: [{ label: "rdp", points: sweep.map(([e, r]) => [e, r.calibrated_value]) }], x: `ε (δ = ${body.delta})`, y: parameter,
  });
  const utility = sweep.filter(([, r]) => r.utility && r.utility.bounds.length);
  const measure = utility.length ? utility[0][1].utility.bounds[0] : null;
  lineChart($("#plot-utility .plot"), {
    title: "Predicted utility against ε",
    description: measure ? `${measure.measure}: ${measure.source}` : answer.utility_reason || "no utility bound for this algorithm",
    series: [{ label: "bound", points: utility.map(([e, r]) => [e, r.utility.bounds[0].value]) }],
    x: `ε (δ = ${body.delta})`, y: measure ? measure.measure : "utility",
  });
}

function caption(figure, text) {
  $(`${figure} figcaption`).textContent = text;
}

function plotRenyi(answer) {
  const rdp = answer.rdp;
  const all = rdp ? rdp.orders.map((a, k) => [a, rdp.epsilons[k]]).filter(([, e]) => e !== null) : [];
  // the orders that matter: up to 16 times the optimal one, values up to 10 times the value there
  const optimum = all.reduce((best, p) => (Math.abs(p[0] - (answer.optimal_order || 0)) < Math.abs(best[0] - (answer.optimal_order || 0)) ? p : best), all[0] || [0, 0]);
  const points = all.filter(([a, e]) => a <= 16 * Math.max(optimum[0], 2) && e <= 10 * Math.max(optimum[1], 1e-12));
  lineChart($("#plot-renyi .plot"), {
    title: "Rényi curve", description: `ε(α) of the whole run; optimal order ${fmt(answer.optimal_order, 4)}`,
    series: [{ label: "ε(α)", points }], x: "order α (log scale)", y: "Rényi ε(α)", logX: true,
    marks: answer.optimal_order ? [{ x: answer.optimal_order, label: `α* = ${fmt(answer.optimal_order, 3)}` }] : [],
  });
}

// -- computing ----------------------------------------------------------------------------------------------------

async function compute() {
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const current = request();
  lastRequest = current;
  saveState();
  snippet(lastSnippet);
  $("#status").textContent = "Computing…";
  try {
    const answer = await api(current.path, current.body, signal);
    renderAnswer(answer, current.path === "/v1/calibrate");
    $("#status").textContent = "Answer ready; plotting…";
    plotRenyi(answer);
    await Promise.all([plotTraining(answer, current.body, signal), plotSweep(answer, current.body, signal)]);
    $("#status").textContent = "Answer and plots ready.";
  } catch (error) {
    if (error.name === "AbortError") return;
    if (error.problem) renderProblem(error);
    else $("#status").textContent = `Error: ${error.message}`;
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(compute, 350);
}

// -- copy as code -------------------------------------------------------------------------------------------------

let lastSnippet = "curl";

function snippet(kind) {
  if (!lastRequest) return "";
  lastSnippet = kind;
  const { path, body } = lastRequest;
  const json = JSON.stringify(body);
  const base = location.origin;
  let code;
  if (kind === "curl") {
    code = `curl -s ${base}${path} -H 'content-type: application/json' -d '${json}'`;
  } else if (kind === "python") {
    const call = path === "/v1/calibrate"
      ? `client.calibrate(${JSON.stringify(body.algorithm)}, ${JSON.stringify(body.params)}, target_epsilon=${body.target_epsilon}, delta=${body.delta}, accountant=${JSON.stringify(body.accountant)})`
      : `client.privacy(${JSON.stringify(body.algorithm)}, ${JSON.stringify(body.params)}, delta=${body.delta}, accountant=${JSON.stringify(body.accountant)})`;
    // the call and its headline, not the whole answer's repr (kilobytes of Rényi curve)
    const shown = path === "/v1/calibrate"
      ? "print(answer.calibrated_parameter, answer.calibrated_value, answer.epsilon, answer.accountant)"
      : "print(answer.epsilon, answer.delta, answer.accountant)";
    const python = call.replaceAll("true", "True").replaceAll("false", "False").replaceAll("null", "None");
    code = `from app.client import DpcalClient\n\nwith DpcalClient(${JSON.stringify(base)}) as client:\n    answer = ${python}\n    ${shown}`;
  } else {
    const command = path === "/v1/calibrate" ? `calibrate ${body.algorithm} --target-epsilon ${body.target_epsilon}` : `privacy ${body.algorithm}`;
    code = `dpcal ${command} --params '${JSON.stringify(body.params)}' --delta ${body.delta} --accountant ${body.accountant} --url ${base}`;
  }
  $("#snippet").textContent = code;
  return code;
}

// -- verification job ---------------------------------------------------------------------------------------------

async function runJob() {
  const button = $("#run-job");
  const example = detail.examples.job;
  if (!example) {
    $("#job-status").textContent = `${detail.id} has no simulator.`;
    return;
  }
  button.disabled = true;
  try {
    let job = await api("/v1/jobs", { algorithm: detail.id, ...example });
    while (!["succeeded", "failed", "cancelled"].includes(job.status)) {
      $("#job-progress").value = job.progress.total ? job.progress.completed / job.progress.total : 0;
      const eta = job.progress.eta_seconds;
      const left = eta === null ? "" : `, about ${eta < 0.1 ? "<0.1" : fmt(eta, 2)} s left`;
      $("#job-status").textContent = `${job.status}: ${job.progress.completed} of ${job.progress.total} trials${left}`;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      job = await api(`/v1/jobs/${job.id}`);
    }
    $("#job-progress").value = 1;
    $("#job-status").textContent = `${job.status} (job ${job.id})`;
    const dl = $("#job-result");
    dl.replaceChildren();
    const result = job.result || {};
    if (result.utility) {
      const u = result.utility;
      dl.append(text("dt", "utility measured"), text("dd", `${u.measure}: mean ${fmt(u.measured.mean, 4)} (95 % interval ${fmt(u.measured.ci95_low, 4)}–${fmt(u.measured.ci95_high, 4)})`));
      dl.append(text("dt", "utility predicted"), text("dd", u.predicted_bound === null ? "no bound" : `${fmt(u.predicted_bound, 4)} (${u.predicted_source})`));
    }
    if (result.privacy_audit) {
      const a = result.privacy_audit;
      dl.append(text("dt", "audit lower bound on ε"), text("dd", `${fmt(a.epsilon_lower_bound, 4)} (95 %, ${a.trials} trials)`));
      dl.append(text("dt", "accounted ε"), text("dd", `${fmt(a.epsilon_accounted, 4)} (${a.accountant}); consistent: ${a.consistent}`));
      dl.append(text("dt", "audit power"), text("dd", `at most ε ≥ ${fmt(a.max_detectable_epsilon, 4)} detectable with these trials; ${a.informative ? "informative" : `not informative: ${a.informative_reason}`}`));
    }
    if (job.error) dl.append(text("dt", "error"), text("dd", job.error.detail || job.error.title));
  } catch (error) {
    $("#job-status").textContent = `Error: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

// -- start --------------------------------------------------------------------------------------------------------

async function loadAlgorithm(id, values = null) {
  detail = await api(`/v1/algorithms/${encodeURIComponent(id)}`);
  $("#algorithm-summary").textContent = `${detail.title}. ${detail.summary} Source: ${detail.source}.`;
  $("#assumptions").replaceChildren(...detail.assumptions.map((a) => text("li", a)));
  const accountant = $("#accountant");
  const previous = accountant.value;
  accountant.replaceChildren(...detail.accountants.map((a) => text("option", a, { value: a })));
  accountant.value = detail.accountants.includes(previous) ? previous : "best";
  buildFields(values || { ...detail.examples.privacy, ...detail.examples.calibrate });
}

async function start() {
  const { query, values } = urlState();
  const list = await api("/v1/algorithms");
  const select = $("#algorithm");
  select.replaceChildren(...list.map((a) => text("option", `${a.id} — ${a.title}`, { value: a.id })));
  const id = query.get("algorithm") && list.some((a) => a.id === query.get("algorithm")) ? query.get("algorithm") : "dp-sgd";
  select.value = id;
  if (query.get("mode") === "privacy") form.elements.mode.value = "privacy";
  for (const key of ["delta", "target_epsilon"]) if (query.get(key)) $(`#${key}`).value = query.get(key);
  await loadAlgorithm(id, values);
  if (query.get("accountant") && detail.accountants.includes(query.get("accountant"))) $("#accountant").value = query.get("accountant");
  if (!query.get("target_epsilon")) $("#target_epsilon").value = String(detail.examples.target_epsilon);
  select.addEventListener("change", async () => {
    await loadAlgorithm(select.value);
    $("#target_epsilon").value = String(detail.examples.target_epsilon);
    compute();
  });
  form.addEventListener("input", (event) => {
    if (event.target === select) return;
    if (event.target.name === "mode") showKnobs();
    schedule();
  });
  form.addEventListener("submit", (event) => { event.preventDefault(); compute(); });
  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      const code = snippet(button.dataset.copy);
      try { await navigator.clipboard.writeText(code); $("#status").textContent = "Copied."; } catch { /* shown below */ }
    });
  }
  $("#run-job").addEventListener("click", runJob);
  await compute();
}

start().catch((error) => { $("#status").textContent = `Error: ${error.message}`; });
