# Reference values for domain/roles.ts, computed another way: the always-valid p-value as
# 1/Λ(0) of the mSPRT (Johari, Pekelis & Walsh), and each adjusted p-value as the smallest α at
# which the procedure itself — Holm's step-down, Benjamini–Hochberg's step-up, run at that α —
# rejects the hypothesis, searched over every candidate α the procedures can switch at.
# Run: python3 test/vectors/roles.py
import json, math

MINIMUM = 100
EFFECT_SIZE = 0.1
ALPHA = 0.05

def p_value(nv, xv, nc, xc):
    pv, pc = xv / nv, xc / nc
    v = pv * (1 - pv) / nv + pc * (1 - pc) / nc
    # Rates on the same standardised scale as means: τ² = (0.1 σ̂)², σ̂² = (p_V(1 − p_V) + p_C(1 − p_C))/2
    tau2 = EFFECT_SIZE ** 2 * (pv * (1 - pv) + pc * (1 - pc)) / 2
    if v <= 0:
        return None, pv - pc
    log_ratio = 0.5 * math.log(v / (v + tau2)) + tau2 * (pv - pc) ** 2 / (2 * v * (v + tau2))
    return min(1.0, math.exp(-log_ratio)), pv - pc

def mean_p_value(nv, sv, s2v, nc, sc, s2c):
    # Means: Welch's V and the mixing variance on the standardised scale, τ² = (0.1 σ̂)², σ̂² = (s_V² + s_C²)/2
    if nv < 2 or nc < 2:
        return None, None
    mv, mc = sv / nv, sc / nc
    vv, vc = (s2v - sv * sv / nv) / (nv - 1), (s2c - sc * sc / nc) / (nc - 1)
    v = vv / nv + vc / nc
    tau2 = EFFECT_SIZE ** 2 * (vv + vc) / 2
    if v <= 0 or tau2 <= 0:
        return None, None
    log_ratio = 0.5 * math.log(v / (v + tau2)) + tau2 * (mv - mc) ** 2 / (2 * v * (v + tau2))
    return min(1.0, math.exp(-log_ratio)), mv - mc

def harm_p_value(d, v, tau2, harm_sign):
    # A guardrail is one-sided: 1/Λ with Λ the likelihood ratio exp(θ d / V − θ² / (2V)) mixed over
    # a half-normal on the harmful side (θ = harm_sign · u, u ≥ 0, density 2 φ(u; 0, τ²)),
    # integrated numerically by Simpson's rule in u (not from the closed form the service uses).
    tau = math.sqrt(tau2)
    top = max(abs(d), 0) + 40 * max(tau, math.sqrt(v))
    steps = 20000
    h = top / steps
    logs = []
    for i in range(steps + 1):
        theta = harm_sign * i * h
        logs.append(theta * d / v - theta * theta / (2 * v) - theta * theta / (2 * tau2))
    peak = max(logs)
    total = sum((1 if i in (0, steps) else 4 if i % 2 else 2) * math.exp(x - peak) for i, x in enumerate(logs)) * h / 3
    log_ratio = math.log(2 / (tau * math.sqrt(2 * math.pi))) + peak + math.log(total)
    return min(1.0, math.exp(-log_ratio))

def mixture(e, v):
    # The difference, its variance V and τ², as p_value and mean_p_value compute them; None without variance.
    if e.get('metric') == 'mean':
        (nv, sv, s2v), (nc, sc, s2c) = v, e['control']
        if nv < 2 or nc < 2:
            return None
        vv, vc = (s2v - sv * sv / nv) / (nv - 1), (s2c - sc * sc / nc) / (nc - 1)
        var, tau2 = vv / nv + vc / nc, EFFECT_SIZE ** 2 * (vv + vc) / 2
        return (sv / nv - sc / nc, var, tau2) if var > 0 and tau2 > 0 else None
    (nv, xv), (nc, xc) = v, e['control']
    pv, pc = xv / nv, xc / nc
    var, tau2 = pv * (1 - pv) / nv + pc * (1 - pc) / nc, EFFECT_SIZE ** 2 * (pv * (1 - pv) + pc * (1 - pc)) / 2
    return (pv - pc, var, tau2) if var > 0 else None

def compare(e, v):
    if e['role'] == 'guardrail':
        m = mixture(e, v)
        if m is None:
            return None, None
        return harm_p_value(m[0], m[1], m[2], -1 if e['direction'] == 'increase' else 1), m[0]
    if e.get('metric') == 'mean':
        return mean_p_value(*v, *e['control'])
    return p_value(v[0], v[1], e['control'][0], e['control'][1])

def holm_rejects(ps, alpha):
    order = sorted(range(len(ps)), key=lambda i: (ps[i], i))
    rejected = set()
    for rank, i in enumerate(order):
        if ps[i] <= alpha / (len(ps) - rank):
            rejected.add(i)
        else:
            break
    return rejected

def bh_rejects(ps, alpha):
    order = sorted(range(len(ps)), key=lambda i: (ps[i], i))
    largest = -1
    for rank, i in enumerate(order):
        if ps[i] <= alpha * (rank + 1) / len(ps):
            largest = rank
    return set(order[: largest + 1])

def adjusted(ps, rejects, candidates):
    """The smallest candidate α (capped at 1) at which the procedure rejects each hypothesis."""
    result = [1.0] * len(ps)
    for alpha in sorted(set(min(1.0, c) for c in candidates)):
        for i in rejects(ps, alpha * (1 + 1e-12)):
            result[i] = min(result[i], alpha)
    return result

def corrected(ps, kind):
    index = [i for i, p in enumerate(ps) if p is not None]
    present = [ps[i] for i in index]
    m = len(present)
    if kind == 'holm':
        out = adjusted(present, holm_rejects, [p * k for p in present for k in range(1, m + 1)])
    else:
        out = adjusted(present, bh_rejects, [p * m / k for p in present for k in range(1, m + 1)])
    full = [None] * len(ps)
    for i, value in zip(index, out):
        full[i] = value
    return full

def verdict(role, direction, enough, difference, adjusted_p):
    if not enough or adjusted_p is None:
        return 'collecting'
    if adjusted_p > ALPHA:
        return 'no_difference'
    better = (difference > 0) == (direction == 'increase')
    if role == 'guardrail':
        return 'no_difference' if better else 'guardrail_violated'
    return 'variant_better' if better else 'variant_worse'

def judge(events):
    raw = [[compare(e, v) for v in e['variants']] for e in events]
    adj = [[r[0] for r in row] for row in raw]
    for i, e in enumerate(events):
        if e['role'] == 'goal':
            adj[i] = corrected(adj[i], 'holm')
    pairs = [(i, j) for i, e in enumerate(events) if e['role'] == 'secondary' for j in range(len(e['variants']))]
    q = corrected([raw[i][j][0] for i, j in pairs], 'bh')
    for (i, j), value in zip(pairs, q):
        adj[i][j] = value
    return [
        [
            {'pValue': raw[i][j][0], 'adjustedPValue': adj[i][j],
             'verdict': verdict(e['role'], e['direction'], v[0] >= MINIMUM and e['control'][0] >= MINIMUM, raw[i][j][1], adj[i][j])}
            for j, v in enumerate(e['variants'])
        ]
        for i, e in enumerate(events)
    ]

def event(role, direction, control, variants, metric='rate'):
    return {'role': role, 'direction': direction, 'control': control, 'variants': variants, 'metric': metric}

def arm(e, values):
    if e['metric'] == 'mean':
        return {'participants': values[0], 'uniqueConversions': 0, 'sum': values[1], 'sumOfSquares': values[2]}
    return {'participants': values[0], 'uniqueConversions': values[1]}

experiments = [
    [event('goal', 'increase', [2000, 200], [[2000, 300], [2000, 205], [2000, 240]]),
     event('guardrail', 'decrease', [2000, 100], [[2000, 160], [2000, 95], [2000, 70]]),
     event('secondary', 'increase', [2000, 400], [[2000, 470], [2000, 380], [2000, 405]]),
     event('secondary', 'decrease', [2000, 300], [[2000, 230], [2000, 310], [2000, 0]])],
    [event('goal', 'decrease', [500, 50], [[500, 20]]),
     event('secondary', 'increase', [500, 0], [[500, 0]]),
     event('guardrail', 'increase', [500, 250], [[500, 150]]),
     event('secondary', 'increase', [500, 100], [[60, 30]])],
    [event('goal', 'increase', [80, 10], [[5000, 900], [5000, 520]]),
     event('secondary', 'increase', [5000, 500], [[5000, 620], [5000, 560]]),
     event('secondary', 'increase', [5000, 500], [[5000, 500], [5000, 590]])],
    # count and value events, judged on their means
    [event('goal', 'increase', [2000, 1000, 1800], [[2000, 1100, 2100], [2000, 1300, 2500], [2000, 990, 1790]], 'mean'),
     event('guardrail', 'decrease', [3000, 4500, 60000], [[3000, 6000, 80000], [3000, 4400, 59000], [3000, 3000, 40000]], 'mean'),
     event('secondary', 'increase', [3000, 300, 900], [[3000, 480, 1500], [3000, 305, 910], [3000, 290, 880]], 'mean'),
     event('secondary', 'increase', [3000, 300], [[3000, 360], [3000, 310], [3000, 300]]),
     event('secondary', 'increase', [1, 5, 25], [[3000, 300, 900], [3000, 310, 920], [3000, 300, 900]], 'mean')],
    # guardrails between the one-sided and the two-sided level: harmed at 5 % one-sided, not at 5 % two-sided
    [event('goal', 'increase', [4000, 400], [[4000, 420], [4000, 400]]),
     event('guardrail', 'increase', [4000, 800], [[4000, 698], [4000, 895], [4000, 800]]),
     event('guardrail', 'decrease', [4000, 200], [[4000, 262], [4000, 150]]),
     event('guardrail', 'decrease', [3000, 3000, 9000], [[3000, 3330, 10000], [3000, 2750, 8300]], 'mean')],
]

cases = []
for events in experiments:
    cases.append({
        'events': [{'role': e['role'], 'direction': e['direction'], 'metric': e['metric'],
                    'control': arm(e, e['control']),
                    'variants': [arm(e, v) for v in e['variants']]} for e in events],
        'expected': judge(events),
    })

with open(__file__.replace('.py', '.json'), 'w') as out:
    json.dump({'generator': 'test/vectors/roles.py', 'cases': cases}, out, indent=1)
    out.write('\n')
