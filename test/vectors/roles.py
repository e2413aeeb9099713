# Reference values for server/domain/roles.ts, computed another way: the always-valid p-value as
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

def compare(e, v):
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
