// Small SVG line charts: labelled axes with units, series told apart by dash pattern and marker shape (readable
// without colour), a <title> and <desc> for screen readers. No dependencies.

const NS = "http://www.w3.org/2000/svg";
const W = 420, H = 260, M = { left: 58, right: 14, top: 14, bottom: 44 };

function el(name, attributes = {}, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

function ticks(lo, hi, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
    return out.filter((t) => t >= lo / 1.0001 && t <= hi * 1.0001);
  }
  const span = hi - lo || Math.abs(hi) || 1;
  const step = 10 ** Math.floor(Math.log10(span / 4));
  const unit = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 6) || step * 10;
  const out = [];
  for (let t = Math.ceil(lo / unit) * unit; t <= hi + unit * 1e-9; t += unit) out.push(Number(t.toPrecision(12)));
  return out;
}

function format(value) {
  if (value === 0) return "0";
  const a = Math.abs(value);
  return a >= 1e4 || a < 1e-3 ? value.toExponential(0) : String(Number(value.toPrecision(3)));
}

/** Draw a chart into ``container``: series [{label, points: [[x, y]…]}], axes {x, y} labels with units, optional
 * log x axis, and vertical ``marks`` [{x, label}]. Returns the <svg>. */
export function lineChart(container, { title, description, series, x, y, logX = false, marks = [] }) {
  container.replaceChildren();
  const points = series.flatMap((s) => s.points).filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b));
  const id = `${container.parentElement.id}-svg`;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${id}-title ${id}-desc` });
  svg.append(el("title", { id: `${id}-title` }, title), el("desc", { id: `${id}-desc` }, description));
  if (!points.length) {
    const words = `No data: ${description}`.split(" ");
    let line = "", row = 0;
    for (const word of words) {  // wrap the reason over a few lines
      if ((line + word).length > 60) {
        svg.append(el("text", { x: 16, y: 40 + 16 * row++ }, line));
        line = "";
      }
      line += `${word} `;
    }
    svg.append(el("text", { x: 16, y: 40 + 16 * row }, line));
    container.append(svg);
    return svg;
  }
  let [x0, x1] = [Math.min(...points.map((p) => p[0])), Math.max(...points.map((p) => p[0]))];
  let [y0, y1] = [Math.min(0, ...points.map((p) => p[1])), Math.max(...points.map((p) => p[1]))];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) y1 = y0 + 1;
  const fx = logX
    ? (v) => M.left + ((Math.log(v) - Math.log(x0)) / (Math.log(x1) - Math.log(x0))) * (W - M.left - M.right)
    : (v) => M.left + ((v - x0) / (x1 - x0)) * (W - M.left - M.right);
  const fy = (v) => H - M.bottom - ((v - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  for (const t of ticks(x0, x1, logX)) {
    svg.append(el("line", { class: "grid", x1: fx(t), x2: fx(t), y1: M.top, y2: H - M.bottom }));
    svg.append(el("text", { x: fx(t), y: H - M.bottom + 14, "text-anchor": "middle" }, format(t)));
  }
  for (const t of ticks(y0, y1, false)) {
    svg.append(el("line", { class: "grid", x1: M.left, x2: W - M.right, y1: fy(t), y2: fy(t) }));
    svg.append(el("text", { x: M.left - 5, y: fy(t) + 4, "text-anchor": "end" }, format(t)));
  }
  svg.append(el("line", { class: "axis", x1: M.left, x2: W - M.right, y1: H - M.bottom, y2: H - M.bottom }));
  svg.append(el("line", { class: "axis", x1: M.left, x2: M.left, y1: M.top, y2: H - M.bottom }));
  svg.append(el("text", { x: (M.left + W - M.right) / 2, y: H - 8, "text-anchor": "middle" }, x));
  svg.append(el("text", { x: 12, y: (M.top + H - M.bottom) / 2, "text-anchor": "middle",
    transform: `rotate(-90 12 ${(M.top + H - M.bottom) / 2})` }, y));
  series.forEach((s, k) => {
    const usable = s.points.filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b));
    if (!usable.length) return;
    svg.append(el("polyline", { class: `series-${k % 3}`, points: usable.map(([a, b]) => `${fx(a)},${fy(b)}`).join(" ") }));
    for (const [a, b] of usable.length <= 40 ? usable : []) {
      const shape = k % 3 === 0 ? el("circle", { cx: fx(a), cy: fy(b), r: 3 })
        : el("rect", { x: fx(a) - 3, y: fy(b) - 3, width: 6, height: 6 });
      shape.setAttribute("class", `marker-${k % 3}`);
      svg.append(shape);
    }
  });
  for (const mark of marks) {
    if (!(mark.x >= x0 && mark.x <= x1)) continue;
    svg.append(el("line", { class: "mark", x1: fx(mark.x), x2: fx(mark.x), y1: M.top, y2: H - M.bottom }));
    svg.append(el("text", { x: fx(mark.x) + 4, y: M.top + 10 }, mark.label));
  }
  if (series.length > 1) {
    series.forEach((s, k) => {
      const yy = M.top + 12 + 14 * k;
      svg.append(el("line", { class: `series-${k % 3}`, x1: W - 150, x2: W - 122, y1: yy - 4, y2: yy - 4 }));
      svg.append(el("text", { x: W - 118, y: yy }, s.label));
    });
  }
  container.append(svg);
  return svg;
}
