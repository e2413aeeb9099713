// The results page: asks for an API token (kept in sessionStorage, never in the URL), lists the
// team's experiments and draws one experiment's results as plain SVG from
// GET /api/teams/{team}/experiments/{experiment}/results. The charts are drawn at the width they
// are shown at (so their text keeps its size on a phone) and drawn again when that width changes.

const TOKEN = 'experimentation.token';
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

// A no-break space between a number and its unit, so that a table cell never wraps inside a value.
const NBSP = '\u00a0';
const percent = (value, digits = 1) => (value === null ? '—' : `${(value * 100).toFixed(digits)}${NBSP}%`);
const points = (value, digits = 2) => (value === null ? '—' : `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(digits)}${NBSP}pp`);
/** A difference of two rates lies within ±100 pp, however wide a sequence computed from few participants is. */
const clampDifference = (value) => Math.max(-1, Math.min(1, value));
const VERDICTS = { collecting: 'collecting data', no_difference: 'no difference shown', variant_better: 'variant better', variant_worse: 'variant worse', guardrail_violated: 'guardrail violated' };

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function api(path) {
  const response = await fetch(path, { headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN)}`, accept: 'application/json' } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body.detail ?? `${response.status} ${response.statusText}`);
  return body;
}

/** An element with attributes and children (strings become text nodes). */
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function svgElement(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A linear scale from [d0, d1] to [r0, r1]. */
const scale = (d0, d1, r0, r1) => (value) => r0 + ((value - d0) / (d1 - d0 || 1)) * (r1 - r0);

/** Round tick values covering [low, high], about `count` of them, and their step. */
function niceTicks(low, high, count) {
  const span = high - low || Math.abs(high) || 1;
  const raw = span / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const ticks = [];
  for (let value = Math.floor(low / step) * step; value <= Math.ceil(high / step) * step + step / 2; value += step) ticks.push(Number(value.toPrecision(12)));
  return { ticks, step };
}

/** The decimals that write ticks `step` apart exactly, in percent or percentage points (2.5 pp: one). */
const decimalsFor = (step) => (String(Number((step * 100).toPrecision(6))).split('.')[1] ?? '').length;

/** Text widths as an SVG draws them, from an invisible SVG of the page (the same font and size). */
const measurer = (() => {
  let svg;
  return (text, className = '') => {
    if (!svg) document.body.append((svg = svgElement('svg', { class: 'measure', 'aria-hidden': 'true' })));
    const node = svg.appendChild(svgElement('text', { class: className }, text));
    const width = node.getComputedTextLength();
    node.remove();
    return width;
  };
})();

/** The text, cut with an ellipsis to fit `width` pixels; the whole text stays in its title. */
function fitted(text, width) {
  if (measurer(text) <= width) return text;
  let fits = 0;
  for (let low = 0, high = text.length; low <= high; ) {
    const middle = (low + high) >> 1;
    if (measurer(`${text.slice(0, middle)}…`) <= width) (fits = middle), (low = middle + 1);
    else high = middle - 1;
  }
  return `${text.slice(0, fits)}…`;
}

function label(attributes, text, width) {
  const node = svgElement('text', attributes, fitted(text, width));
  if (node.textContent !== text) node.append(svgElement('title', {}, text));
  return node;
}

/** A variant's name, marked when it is the control, unless its name says so already. */
const variantName = (v) => (v.control && v.variant.toLowerCase() !== 'control' ? `${v.variant} (control)` : v.variant);

function signIn(message) {
  $('main').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').hidden = !message;
  $('sign-in-error').textContent = message ?? '';
  $('token').focus();
}

async function start() {
  if (!sessionStorage.getItem(TOKEN)) return signIn();
  let team;
  try {
    team = (await api('/api/current-team')).data;
  } catch (error) {
    if (error.status === 401) sessionStorage.removeItem(TOKEN);
    return signIn(error.status === 401 ? 'That token is not valid (or was revoked).' : error.message);
  }
  $('sign-in').hidden = true;
  $('main').hidden = false;
  $('team-name').textContent = team.name;
  const experiments = [];
  for (let page = 1; ; page++) {
    const body = await api(`/api/teams/${team.id}/experiments?per_page=100&page=${page}`);
    experiments.push(...body.data);
    if (page >= body.meta.last_page) break;
  }
  const list = $('experiments');
  list.replaceChildren(
    ...experiments.map((experiment) =>
      element(
        'li',
        {},
        element('a', { href: `#${experiment.key}`, 'data-experiment': experiment.key }, experiment.key, element('br'), element('span', { class: 'status' }, experiment.status)),
      ),
    ),
  );
  if (experiments.length === 0) list.append(element('li', { class: 'hint' }, 'No experiments yet.'));
  const show = () => {
    const key = decodeURIComponent(location.hash.slice(1));
    for (const link of list.querySelectorAll('a')) {
      if (link.dataset.experiment === key) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    if (key) showExperiment(team, key).catch((error) => $('experiment').replaceChildren(element('p', { class: 'error', role: 'alert' }, error.message)));
  };
  window.addEventListener('hashchange', show);
  show();
}

/** What is shown, so that a change of width draws it again without asking the API again. */
let shown;

async function showExperiment(team, key, historyEvent) {
  // The results describe the team's first 20 events (goal first); the history may be any event's: the picker lists the team's.
  const { data: events } = await api(`/api/teams/${team.id}/events?per_page=100`);
  const described = events.slice(0, 20).map((event) => event.key).join(',');
  const query = new URLSearchParams({ ...(historyEvent && { history_event: historyEvent }), ...(described && { events: described }) });
  const { data: results } = await api(`/api/teams/${team.id}/experiments/${encodeURIComponent(key)}/results?${query}`);
  shown = { team, results, eventKeys: events.map((event) => event.key) };
  draw(shown);
}

function draw({ team, results, eventKeys }) {
  const section = $('experiment');
  section.replaceChildren(element('h2', {}, `${results.experiment}`));
  section.append(summary(results));
  if (results.srm_warning) {
    section.append(
      element(
        'p',
        { id: 'srm-warning', class: 'warning', role: 'alert' },
        `Sample-ratio mismatch: the participants are not split as the traffic says (χ² = ${results.srm.chi_square.toFixed(2)}, p = ${results.srm.p_value.toExponential(2)}). Assignment or data collection is broken; do not trust the verdicts until it is found.`,
      ),
    );
  }
  if (results.coverage_changes.length > 0) section.append(coverageView(results));
  const width = Math.max(260, Math.min(760, Math.floor(section.clientWidth)));
  for (const event of results.events) section.append(eventView(event, width));
  section.append(historyView(team, results, eventKeys, width));
  section.append(
    element(
      'p',
      { class: 'hint' },
      `Verdicts come from always-valid 95 % confidence sequences (mixture SPRT, tuned at ${results.method.means_effect_size} standard deviations of the metric), so looking every day does not inflate false positives; a verdict needs ${results.method.minimum_participants} participants in the variant and in the control. The corrected verdict (the upper one) is the one to decide by: it reads better and worse by the event's direction, keeps the goal's false positives across variants at 5 % (Holm) and the secondary events' false discoveries at 5 % (Benjamini–Hochberg), and flags a guardrail that got significantly worse; the raw one below it is uncorrected. A count or value event is judged on its mean per participant: its corrected verdict reads the always-valid sequence of the means table, and its history charts that sequence. A difference of rates lies within ±100 pp: a sequence wider than that (few participants) is shown cut at ±100 pp.`,
    ),
  );
  section.dataset.width = String(width);
  section.dataset.drawn = `${results.experiment}:${results.history.event}`;
}

let redraw = 0;
window.addEventListener('resize', () => {
  cancelAnimationFrame(redraw);
  redraw = requestAnimationFrame(() => {
    const section = $('experiment');
    const width = Math.max(260, Math.min(760, Math.floor(section.clientWidth)));
    if (shown && section.dataset.width !== String(width)) draw(shown);
  });
});

function summary(results) {
  const item = (label, value) => element('div', {}, element('dt', {}, label), element('dd', {}, value));
  return element(
    'dl',
    { class: 'summary' },
    item('status', results.status),
    item('participants', String(results.participants)),
    item('coverage', `${results.coverage} %`),
    item('goal', results.goal),
    item('started', results.runtime.started_at?.slice(0, 10) ?? '—'),
    item('stopped', results.runtime.stopped_at?.slice(0, 10) ?? '—'),
    item('days running', results.runtime.days_running === null ? '—' : String(results.runtime.days_running)),
  );
}

/** The coverage ramp: each change's time, old and new coverage. */
function coverageView(results) {
  const rows = results.coverage_changes.map((change) =>
    element('tr', {}, element('td', {}, change.at.replace('T', ' ').slice(0, 16)), element('td', {}, `${change.from} %`), element('td', {}, `${change.to} %`)),
  );
  return element(
    'section',
    { id: 'coverage-changes' },
    element('h3', {}, 'Coverage changes'),
    element('table', {}, element('thead', {}, element('tr', {}, element('th', {}, 'at (UTC)'), element('th', {}, 'from'), element('th', {}, 'to'))), element('tbody', {}, ...rows)),
    element('p', { class: 'hint' }, 'The variant split stays the shares through a ramp, so the comparisons and the sample-ratio check hold across it.'),
  );
}

/**
 * The columns of an event's table: a heading and what a variant's cell shows. On a narrow screen
 * the table becomes one card per variant, each cell labelled with its heading.
 */
const COLUMNS = [
  { head: 'variant', cell: (v) => variantName(v) },
  { head: 'participants', cell: (v) => String(v.participants) },
  { head: 'converted', cell: (v) => String(v.statistics.unique_conversions) },
  { head: 'rate', cell: (v) => percent(v.statistics.unique_conversion_rate, 2) },
  { head: 'difference', cell: (v) => points(v.difference) },
  {
    head: `always-valid 95${NBSP}%`,
    cell: (v) => (v.confidence_sequence ? `${points(clampDifference(v.confidence_sequence.lower))} … ${points(clampDifference(v.confidence_sequence.upper))}` : '—'),
  },
  { head: 'chance to beat', cell: (v) => (v.statistics.chance_to_beat_control === null ? '—' : percent(v.statistics.chance_to_beat_control)) },
  {
    head: 'verdict: corrected, raw',
    cell: (v) =>
      v.verdict || v.corrected_verdict
        ? element(
            'span',
            { class: 'verdicts' },
            v.corrected_verdict ? element('span', { class: 'decision', 'data-verdict': v.corrected_verdict, title: `adjusted p = ${v.adjusted_p_value === null ? '—' : v.adjusted_p_value.toPrecision(3)}` }, VERDICTS[v.corrected_verdict]) : '',
            v.verdict ? element('span', { class: 'verdict', 'data-verdict': v.verdict, title: 'uncorrected, direction-blind' }, VERDICTS[v.verdict]) : '',
          )
        : '',
  },
];

const ROLES = { goal: 'goal', guardrail: 'guardrail', secondary: 'secondary' };

function eventView(event, width) {
  const view = element('article', { class: 'event', 'data-event': event.event });
  view.append(element('h3', {}, `${event.event} (${ROLES[event.role]}, ${event.direction === 'decrease' ? 'lower' : 'higher'} is better)`));
  if (event.variants.length === 0) return view.append(element('p', { class: 'hint' }, 'No variants yet.')), view;
  view.append(forestPlot(event, width));
  const rows = event.variants.map((v) =>
    element('tr', { 'data-variant': v.variant }, ...COLUMNS.map((column) => element('td', { 'data-label': column.head }, column.cell(v)))),
  );
  const table = element('table', {}, element('thead', {}, element('tr', {}, ...COLUMNS.map((column) => element('th', {}, column.head)))), element('tbody', {}, ...rows));
  view.append(element('div', { class: 'table' }, table));
  if (event.variants.some((v) => v.statistics.means)) view.append(meansTable(event));
  const needed = neededLine(event);
  if (needed) view.append(needed);
  return view;
}

/** The participants still needed for the experiment's minimum effect, on the metric the event is judged by; none without one. */
function neededLine(event) {
  const figures = event.variants
    .filter((v) => !v.control)
    .map((v) => [v.variant, event.type === 'unique' ? v.statistics.participants_needed : v.statistics.means && v.statistics.means.participants_needed])
    .filter(([, needed]) => needed !== null);
  if (figures.length === 0) return null;
  const list = figures.map(([variant, needed]) => `${variant} and the control ${needed}`).join(', ');
  return element('p', { class: 'hint needed' }, `Participants still needed to detect the experiment's minimum effect with 80${NBSP}% power: ${list}.`);
}

const number = (value) => (value === null ? '—' : value.toFixed(Math.abs(value) < 10 ? 3 : 2));
const range = (interval) => (interval ? `${number(interval.lower)} … ${number(interval.upper)}` : '—');

/**
 * Count and value events: the mean per participant, the difference with its fixed-horizon 95 %
 * interval (Welch), the relative uplift, the always-valid sequence the corrected verdict reads,
 * and the participants still needed for the experiment's minimum effect.
 */
function meansTable(event) {
  const head = ['variant', 'mean per participant', 'difference', '95 % interval', 'relative', 'p (Welch)', `always-valid 95${NBSP}%`];
  const rows = event.variants.map((v) => {
    const { means } = v.statistics;
    const cells = [
      variantName(v),
      number(means.mean),
      number(means.difference),
      range(means.difference_interval),
      means.relative_uplift === null ? '—' : percent(means.relative_uplift, 1),
      means.p_value === null ? '—' : means.p_value.toFixed(3),
      range(v.means_sequence && v.means_sequence.confidence_sequence),
    ];
    return element('tr', { 'data-variant': v.variant }, ...cells.map((cell, i) => element('td', { 'data-label': head[i] }, cell)));
  });
  return element('table', { class: 'means' }, element('thead', {}, element('tr', {}, ...head.map((h) => element('th', {}, h)))), element('tbody', {}, ...rows));
}

/** Each variant's unique conversion rate with its 95 % interval, against the control's rate. */
function forestPlot(event, width) {
  const rowHeight = 28;
  const height = 34 + rowHeight * event.variants.length;
  const names = event.variants.map(variantName);
  const nameWidth = Math.min(Math.max(...names.map((name) => measurer(name))), width * 0.35);
  const upper = Math.max(0.01, ...event.variants.map((v) => v.statistics.conversion_rate_interval?.upper ?? 0));
  const plotLeft = nameWidth + 16;
  const { ticks, step } = niceTicks(0, Math.min(1, upper * 1.05), Math.max(2, Math.floor((width - plotLeft) / 80)));
  const tickLabels = ticks.map((tick) => percent(tick, decimalsFor(step)));
  const left = plotLeft + measurer(tickLabels[0]) / 2;
  const right = width - measurer(tickLabels.at(-1)) / 2 - 4;
  const x = scale(0, ticks.at(-1), left, right);
  const svg = svgElement('svg', { class: 'forest', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Conversion rates on ${event.event}` });
  const bottom = height - 22;
  svg.append(svgElement('line', { class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom }));
  ticks.forEach((tick, i) => svg.append(svgElement('text', { class: 'muted', x: x(tick), y: height - 6, 'text-anchor': 'middle' }, tickLabels[i])));
  const control = event.variants.find((v) => v.control);
  if (control?.statistics.unique_conversion_rate != null) {
    const cx = x(control.statistics.unique_conversion_rate);
    svg.append(svgElement('line', { class: 'control-rate', x1: cx, x2: cx, y1: 5, y2: bottom }));
  }
  event.variants.forEach((v, i) => {
    const y = 15 + i * rowHeight;
    const rate = v.statistics.unique_conversion_rate;
    const interval = v.statistics.conversion_rate_interval;
    const row = svgElement('g', { class: 'row', 'data-variant': v.variant });
    row.append(label({ x: 4, y: y + 4 }, names[i], nameWidth));
    if (interval) {
      row.append(svgElement('line', { class: `interval${v.control ? ' control' : ''}`, x1: x(interval.lower), x2: x(interval.upper), y1: y, y2: y, 'data-lower': interval.lower, 'data-upper': interval.upper }));
    }
    if (rate !== null) row.append(svgElement('circle', { class: `estimate${v.control ? ' control' : ''}`, cx: x(rate), cy: y, r: 5, 'data-rate': rate }));
    svg.append(row);
  });
  return svg;
}

/** The cumulative difference of each variant against the control, day by day, inside its confidence sequence. */
function historyView(team, results, eventKeys, width) {
  const view = element('article', { class: 'history', 'data-event': results.history.event });
  const keys = [...new Set([results.history.event, ...eventKeys])].sort();
  const picker = element('select', { id: 'history-event', 'aria-label': 'Event of the history' }, ...keys.map((key) => element('option', { value: key }, key)));
  picker.value = results.history.event;
  picker.addEventListener('change', () => void showExperiment(team, results.experiment, picker.value));
  view.append(element('h3', {}, 'Over time: difference against the control with its always-valid 95 % sequence on '), picker);
  const days = results.history.days;
  if (days.length === 0) return view.append(element('p', { class: 'hint' }, 'Nothing counted yet.')), view;
  const variants = days[0].variants.filter((v) => v.variant !== results.control).map((v) => v.variant);
  // A count or value event's days carry the sequence on the mean, the one its verdicts read.
  const onMeans = days.some((day) => day.variants.some((v) => v.means_sequence));
  const unit = onMeans ? MEANS : RATES;
  for (const variant of variants) {
    const series = days.map((day) => {
      const v = day.variants.find((candidate) => candidate.variant === variant);
      if (!onMeans) return { day: day.day, ...v };
      return { day: day.day, corrected_verdict: v.corrected_verdict, difference: v.means_sequence && v.means_sequence.difference, confidence_sequence: v.means_sequence && v.means_sequence.confidence_sequence };
    });
    const last = series.at(-1).corrected_verdict;
    view.append(element('p', { class: 'hint' }, `${variant} − ${results.control}${onMeans ? ', mean per participant' : ''}${last ? `: ${VERDICTS[last]}` : ''}`), sequenceChart(variant, series, width, unit));
  }
  return view;
}

/** How a chart shows differences: of rates in percentage points, cut at ±100 pp; of means as they are. */
const RATES = { clamp: clampDifference, label: points, limits: [-1, 1], decimals: decimalsFor };
const MEANS = {
  clamp: (value) => value,
  label: (value, digits) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(digits)}`,
  limits: [-Infinity, Infinity],
  decimals: (step) => (String(Number(step.toPrecision(6))).split('.')[1] ?? '').length,
};

function sequenceChart(variant, series, width, unit = RATES) {
  const clampDifference = unit.clamp;
  const height = 220;
  const top = 10;
  const bottom = height - 30;
  const drawn = series.filter((point) => point.confidence_sequence !== null);
  const values = drawn.flatMap((point) => [point.confidence_sequence.lower, point.confidence_sequence.upper]).map(clampDifference);
  const { ticks, step } = niceTicks(Math.min(0, ...values), Math.max(0, ...values), 4);
  const yTicks = ticks.filter((tick) => tick >= unit.limits[0] && tick <= unit.limits[1]);
  const tickLabels = yTicks.map((tick) => (tick === 0 ? (unit === RATES ? `0${NBSP}pp` : '0') : unit.label(tick, unit.decimals(step))));
  const left = Math.max(...tickLabels.map((text) => measurer(text))) + 10;
  const right = width - 12;
  // One day is drawn in the middle, its sequence as a bar as wide as a day would be among a week's.
  const single = series.length === 1;
  const x = single ? () => (left + right) / 2 : scale(0, series.length - 1, left, right);
  const y = scale(yTicks[0], yTicks.at(-1), bottom, top);
  const svg = svgElement('svg', { class: 'sequence', 'data-variant': variant, width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Difference of ${variant} over time` });
  svg.append(svgElement('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }));
  yTicks.forEach((tick, i) => {
    if (tick !== 0) svg.append(svgElement('line', { class: 'grid', x1: left, x2: right, y1: y(tick), y2: y(tick) }));
    svg.append(svgElement('text', { class: 'muted', x: left - 6, y: y(tick) + 4, 'text-anchor': 'end' }, tickLabels[i]));
  });
  svg.append(svgElement('line', { class: 'zero', x1: left, x2: right, y1: y(0), y2: y(0) }));
  if (single) svg.append(svgElement('text', { class: 'muted', x: x(0), y: height - 8, 'text-anchor': 'middle' }, series[0].day));
  else {
    svg.append(svgElement('text', { class: 'muted', x: left, y: height - 8 }, series[0].day));
    svg.append(svgElement('text', { class: 'muted', x: right, y: height - 8, 'text-anchor': 'end' }, series.at(-1).day));
  }
  const index = new Map(series.map((point, i) => [point.day, i]));
  const at = (p) => x(index.get(p.day));
  const lower = (p) => y(clampDifference(p.confidence_sequence.lower));
  const upper = (p) => y(clampDifference(p.confidence_sequence.upper));
  if (drawn.length === 1) {
    const [p] = drawn;
    const half = Math.min(24, (right - left) / 14);
    svg.append(svgElement('rect', { class: 'sequence-band', x: at(p) - half, width: 2 * half, y: upper(p), height: Math.max(1, lower(p) - upper(p)) }));
  } else if (drawn.length > 0) {
    const upperEdge = drawn.map((p) => `${at(p)},${upper(p)}`);
    const lowerEdge = drawn.map((p) => `${at(p)},${lower(p)}`).reverse();
    svg.append(svgElement('polygon', { class: 'sequence-band', points: [...upperEdge, ...lowerEdge].join(' ') }));
    svg.append(svgElement('polyline', { class: 'difference-line', points: drawn.map((p) => `${at(p)},${y(p.difference)}`).join(' ') }));
  }
  for (const p of drawn) {
    svg.append(
      svgElement('circle', {
        class: 'point',
        cx: at(p),
        cy: y(p.difference),
        r: 3,
        'data-day': p.day,
        'data-difference': p.difference,
        'data-lower': p.confidence_sequence.lower,
        'data-upper': p.confidence_sequence.upper,
        'data-corrected-verdict': p.corrected_verdict ?? '',
      }),
    );
  }
  return svg;
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN, $('token').value.trim());
  $('token').value = '';
  void start();
});
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN);
  signIn();
});
void start();
