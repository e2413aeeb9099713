// The results page: asks for an API token (kept in sessionStorage, never in the URL), lists the
// team's experiments and draws one experiment's results as plain SVG from
// GET /api/teams/{team}/experiments/{experiment}/results.

const TOKEN = 'experimentation.token';
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

const percent = (value, digits = 1) => (value === null ? '—' : `${(value * 100).toFixed(digits)} %`);
const points = (value) => (value === null ? '—' : `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(2)} pp`);
const VERDICTS = { collecting: 'collecting data', no_difference: 'no difference shown', variant_better: 'variant better', variant_worse: 'variant worse' };

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

async function showExperiment(team, key, historyEvent) {
  const query = historyEvent ? `?history_event=${encodeURIComponent(historyEvent)}` : '';
  const results = (await api(`/api/teams/${team.id}/experiments/${encodeURIComponent(key)}/results${query}`)).data;
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
  for (const event of results.events) section.append(eventView(event));
  section.append(historyView(team, results));
  section.append(
    element(
      'p',
      { class: 'hint' },
      `Verdicts come from always-valid 95 % confidence sequences (mixture SPRT, τ = ${results.method.mixing_sd}), so looking every day does not inflate false positives; a verdict needs ${results.method.minimum_participants} participants in the variant and in the control.`,
    ),
  );
}

function summary(results) {
  const item = (label, value) => element('div', {}, element('dt', {}, label), element('dd', {}, value));
  return element(
    'dl',
    { class: 'summary' },
    item('status', results.status),
    item('participants', String(results.participants)),
    item('goal', results.goal),
    item('started', results.runtime.started_at?.slice(0, 10) ?? '—'),
    item('stopped', results.runtime.stopped_at?.slice(0, 10) ?? '—'),
    item('days running', results.runtime.days_running === null ? '—' : String(results.runtime.days_running)),
  );
}

function eventView(event) {
  const view = element('article', { class: 'event', 'data-event': event.event });
  view.append(element('h3', {}, `${event.event}${event.goal ? ' (goal)' : ''}`));
  if (event.variants.length === 0) return view.append(element('p', { class: 'hint' }, 'No variants yet.')), view;
  view.append(forestPlot(event));
  const rows = event.variants.map((v) =>
    element(
      'tr',
      { 'data-variant': v.variant },
      element('td', {}, v.variant + (v.control ? ' (control)' : '')),
      element('td', {}, String(v.participants)),
      element('td', {}, String(v.statistics.unique_conversions)),
      element('td', {}, percent(v.statistics.unique_conversion_rate, 2)),
      element('td', {}, points(v.difference)),
      element('td', {}, v.confidence_sequence ? `${points(v.confidence_sequence.lower)} … ${points(v.confidence_sequence.upper)}` : '—'),
      element('td', {}, v.statistics.chance_to_beat_control === null ? '—' : percent(v.statistics.chance_to_beat_control)),
      element('td', {}, v.verdict ? element('span', { class: 'verdict', 'data-verdict': v.verdict }, VERDICTS[v.verdict]) : ''),
    ),
  );
  const head = ['variant', 'participants', 'converted', 'rate', 'difference', 'always-valid 95 %', 'chance to beat', 'verdict'];
  view.append(element('table', {}, element('thead', {}, element('tr', {}, ...head.map((h) => element('th', {}, h)))), element('tbody', {}, ...rows)));
  return view;
}

/** Each variant's unique conversion rate with its 95 % interval, against the control's rate. */
function forestPlot(event) {
  const width = 720;
  const rowHeight = 28;
  const left = 150;
  const right = 30;
  const height = 30 + rowHeight * event.variants.length;
  const upper = Math.max(0.01, ...event.variants.map((v) => v.statistics.conversion_rate_interval?.upper ?? 0));
  const x = scale(0, upper * 1.1, left, width - right);
  const svg = svgElement('svg', { class: 'forest', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Conversion rates on ${event.event}` });
  const bottom = height - 20;
  svg.append(svgElement('line', { class: 'axis', x1: left, x2: width - right, y1: bottom, y2: bottom }));
  for (const tick of [0, upper * 0.55, upper * 1.1]) {
    svg.append(svgElement('text', { class: 'muted', x: x(tick), y: height - 5, 'text-anchor': 'middle' }, percent(tick)));
  }
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
    row.append(svgElement('text', { x: 5, y: y + 4 }, `${v.variant}${v.control ? ' (control)' : ''}`));
    if (interval) {
      row.append(svgElement('line', { class: `interval${v.control ? ' control' : ''}`, x1: x(interval.lower), x2: x(interval.upper), y1: y, y2: y, 'data-lower': interval.lower, 'data-upper': interval.upper }));
    }
    if (rate !== null) row.append(svgElement('circle', { class: `estimate${v.control ? ' control' : ''}`, cx: x(rate), cy: y, r: 5, 'data-rate': rate }));
    svg.append(row);
  });
  return svg;
}

/** The cumulative difference of each variant against the control, day by day, inside its confidence sequence. */
function historyView(team, results) {
  const view = element('article', { class: 'history', 'data-event': results.history.event });
  const picker = element('select', { id: 'history-event', 'aria-label': 'Event of the history' }, ...results.events.map((e) => element('option', { value: e.event }, e.event)));
  picker.value = results.history.event;
  picker.addEventListener('change', () => void showExperiment(team, results.experiment, picker.value));
  view.append(element('h3', {}, 'Over time: difference against the control with its always-valid 95 % sequence on '), picker);
  const days = results.history.days;
  if (days.length === 0) return view.append(element('p', { class: 'hint' }, 'Nothing counted yet.')), view;
  const variants = days[0].variants.filter((v) => v.variant !== results.control).map((v) => v.variant);
  for (const variant of variants) {
    const series = days.map((day) => ({ day: day.day, ...day.variants.find((v) => v.variant === variant) }));
    view.append(element('p', { class: 'hint' }, `${variant} − ${results.control}`), sequenceChart(variant, series));
  }
  return view;
}

function sequenceChart(variant, series) {
  const width = 720;
  const height = 220;
  const left = 60;
  const right = 20;
  const top = 10;
  const bottom = height - 30;
  const drawn = series.filter((point) => point.confidence_sequence !== null);
  const values = drawn.flatMap((point) => [point.confidence_sequence.lower, point.confidence_sequence.upper]);
  const low = Math.min(0, ...values);
  const high = Math.max(0, ...values);
  const x = scale(0, Math.max(1, series.length - 1), left, width - right);
  const y = scale(low, high, bottom, top);
  const svg = svgElement('svg', { class: 'sequence', 'data-variant': variant, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Difference of ${variant} over time` });
  svg.append(svgElement('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }));
  svg.append(svgElement('line', { class: 'zero', x1: left, x2: width - right, y1: y(0), y2: y(0) }));
  for (const value of [low, 0, high]) svg.append(svgElement('text', { class: 'muted', x: left - 5, y: y(value) + 4, 'text-anchor': 'end' }, points(value)));
  svg.append(svgElement('text', { class: 'muted', x: left, y: height - 8 }, series[0].day));
  svg.append(svgElement('text', { class: 'muted', x: width - right, y: height - 8, 'text-anchor': 'end' }, series.at(-1).day));
  const index = new Map(series.map((point, i) => [point.day, i]));
  if (drawn.length > 0) {
    const upperEdge = drawn.map((p) => `${x(index.get(p.day))},${y(p.confidence_sequence.upper)}`);
    const lowerEdge = drawn.map((p) => `${x(index.get(p.day))},${y(p.confidence_sequence.lower)}`).reverse();
    svg.append(svgElement('polygon', { class: 'sequence-band', points: [...upperEdge, ...lowerEdge].join(' ') }));
    svg.append(svgElement('polyline', { class: 'difference-line', points: drawn.map((p) => `${x(index.get(p.day))},${y(p.difference)}`).join(' ') }));
  }
  for (const p of drawn) {
    svg.append(
      svgElement('circle', {
        class: 'point',
        cx: x(index.get(p.day)),
        cy: y(p.difference),
        r: 3,
        'data-day': p.day,
        'data-difference': p.difference,
        'data-lower': p.confidence_sequence.lower,
        'data-upper': p.confidence_sequence.upper,
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
