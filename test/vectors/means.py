# Reference values for domain/{statistics,exact,means,power,sequential,multiplicity}.ts,
# computed another way, in pure Python (no scipy): the Student t distribution from its density
# integrated by Simpson's rule (not the incomplete beta function the server uses), quantiles by
# bisection, Fisher's exact test with exact integer binomial coefficients (fractions), the
# always-valid bounds by bisection on the mixture likelihood ratio. Run: python3 test/vectors/means.py
import json, math
from fractions import Fraction

def phi(z):
    return 0.5 * math.erfc(-z / math.sqrt(2))

def bisect(f, lo, hi, target):
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2

def t_density(x, dof):
    return math.exp(math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi) - (dof + 1) / 2 * math.log1p(x * x / dof))

def t_cdf(x, dof):
    # P(T <= x) = 1/2 + sign(x) * integral of the density over [0, |x|], composite Simpson's rule.
    a = abs(x)
    steps = 20000
    h = a / steps
    total = t_density(0, dof) + t_density(a, dof)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * t_density(i * h, dof)
    half = total * h / 3
    return 0.5 + half if x >= 0 else 0.5 - half

def t_two_sided(t, dof):
    return 2 * (1 - t_cdf(abs(t), dof))

def t_quantile(p, dof):
    return bisect(lambda x: t_cdf(x, dof), -50, 50, p)

Z975 = bisect(phi, -10, 10, 0.975)
Z80 = bisect(phi, -10, 10, 0.8)

def r(x, digits=10):
    return None if x is None else round(x, digits)

# --- rates: unpooled z, p, interval; Fisher's exact test below 5 expected converters or non-converters
def fisher(n1, x1, n2, x2):
    k = x1 + x2
    total = math.comb(n1 + n2, k)
    prob = lambda x: Fraction(math.comb(n1, x) * math.comb(n2, k - x), total)
    observed = prob(x1)
    return float(sum(prob(x) for x in range(max(0, k - n2), min(n1, k) + 1) if prob(x) <= observed))

def needs_exact(nv, xv, nc, xc):
    rate = (xv + xc) / (nv + nc)
    return any(n * rate < 5 or n * (1 - rate) < 5 for n in (nv, nc))

rates = []
for (nc, xc, nv, xv) in [(1000, 100, 1000, 130), (5000, 400, 5000, 420), (200, 30, 180, 18), (10000, 1000, 10000, 1100),
                         (1000, 100, 100, 17), (50, 3, 50, 0), (40, 2, 45, 9), (2000, 1995, 2000, 1999), (30, 0, 30, 0)]:
    case = {'control': {'participants': nc, 'uniqueConversions': xc}, 'variant': {'participants': nv, 'uniqueConversions': xv}}
    pv, pc = xv / nv, xc / nc
    if needs_exact(nv, xv, nc, xc):
        p = fisher(nv, xv, nc, xc)
        case['expected'] = {'test': 'exact', 'zScore': None, 'pValue': r(p), 'differenceInterval': None, 'minimumDetectableEffect': None}
    else:
        se = math.sqrt(pv * (1 - pv) / nv + pc * (1 - pc) / nc)
        z = (pv - pc) / se
        case['expected'] = {'test': 'normal', 'zScore': r(z), 'pValue': r(2 * (1 - phi(abs(z)))),
                            'differenceInterval': {'lower': r(pv - pc - Z975 * se), 'upper': r(pv - pc + Z975 * se)},
                            'minimumDetectableEffect': r((Z975 + Z80) * se)}
    rates.append(case)

# --- means: Welch, relative by the delta method
def summary(n, s, s2):
    m = s / n
    return m, (s2 - n * m * m) / (n - 1)

means = []
for (nc, sc, s2c, nv, sv, s2v) in [(500, 900, 2600, 500, 1000, 3100), (400, 2000, 60000, 400, 2400, 75000), (2000, 1000, 1800, 2000, 1100, 2100),
                                   (120, 3050.25, 160000.5, 95, 3400.75, 250000.125), (1000, -250, 9000, 1200, 120, 11000)]:
    mc, vc = summary(nc, sc, s2c)
    mv, vv = summary(nv, sv, s2v)
    a, b = vv / nv, vc / nc
    se = math.sqrt(a + b)
    dof = (a + b) ** 2 / (a * a / (nv - 1) + b * b / (nc - 1))
    q = t_quantile(0.975, dof)
    d = mv - mc
    # The relative figures have no meaning unless the control's mean is positive: null.
    rel = mv / mc - 1 if mc > 0 else None
    rse = math.sqrt(vv / (mc * mc * nv) + vc * mv * mv / (mc ** 4 * nc)) if mc > 0 else None
    means.append({
        'control': {'participants': nc, 'sum': sc, 'sumOfSquares': s2c},
        'variant': {'participants': nv, 'sum': sv, 'sumOfSquares': s2v},
        'expected': {
            'controlMean': r(mc), 'controlVariance': r(vc), 'variantMean': r(mv), 'variantVariance': r(vv),
            'difference': r(d), 'standardError': r(se), 'degreesOfFreedom': r(dof, 6), 'pValue': r(t_two_sided(d / se, dof)),
            'interval': {'lower': r(d - q * se), 'upper': r(d + q * se)},
            'relativeUplift': r(rel), 'relativeStandardError': r(rse), 'relativePValue': None if rel is None else r(t_two_sided(rel / rse, dof)),
            'relativeInterval': None if rel is None else {'lower': r(rel - q * rse), 'upper': r(rel + q * rse)},
            'minimumDetectableEffect': r((Z975 + Z80) * se),
            # gbstats' effect Bayesian test with a flat prior: the posterior of the effect is normal, centred on the
            # estimate with the frequentist SE, and the chance to beat the control is its mass above 0.
            'chanceToBeatControl': r(phi(d / se)),
            'relativeChanceToBeatControl': None if rel is None else r(phi(rel / rse)),
        },
    })

# --- values near 10⁹: the variance from the values themselves, exactly (fractions of the decimals as written),
# where Σy² − (Σy)²/n in doubles loses it (Σy² ≈ 2·10²⁰ beside a variance of 2.5·10⁻⁵)
def exact_arm(values):
    ys = [Fraction(v) for v in values]
    n = len(ys)
    mean = sum(ys) / n
    return n, mean, sum((y - mean) ** 2 for y in ys) / (n - 1)

def micros(values):
    ys = [int(Fraction(v) * 10 ** 6) for v in values]
    return {'participants': len(ys), 'sum': str(sum(ys)), 'sumOfSquares': str(sum(y * y for y in ys))}

large_values = []
for (control, variant) in [(['999999999.99', '1000000000'] * 25, ['999999999.97', '999999999.98', '1000000000', '1000000000'] * 12),
                           (['999999999.97', '999999999.99', '1000000000'] * 40, ['1000000000', '999999999.98'] * 60)]:
    nc, mc, vc = exact_arm(control)
    nv, mv, vv = exact_arm(variant)
    a, b = float(vv) / nv, float(vc) / nc
    se = math.sqrt(a + b)
    dof = (a + b) ** 2 / (a * a / (nv - 1) + b * b / (nc - 1))
    d = float(mv - mc)
    large_values.append({'control': micros(control), 'variant': micros(variant),
                         'expected': {'controlVariance': float(vc), 'variantVariance': float(vv), 'difference': d, 'standardError': se,
                                      'degreesOfFreedom': r(dof, 6), 'pValue': r(t_two_sided(d / se, dof))}})

# --- always-valid inference on a difference of means, τ = 0.1 · √((s_V² + s_C²) / 2)
def log_ratio(theta_hat, theta0, v, tau2):
    return 0.5 * math.log(v / (v + tau2)) + tau2 * (theta_hat - theta0) ** 2 / (2 * v * (v + tau2))

def sequence_bound(theta_hat, v, tau2, alpha, direction, scale):
    inside, outside = theta_hat, theta_hat + direction * scale
    for _ in range(200):
        middle = (inside + outside) / 2
        if log_ratio(theta_hat, middle, v, tau2) < math.log(1 / alpha):
            inside = middle
        else:
            outside = middle
    return (inside + outside) / 2

sequences = []
for case in means:
    c, v = case['control'], case['variant']
    mc, vc = summary(c['participants'], c['sum'], c['sumOfSquares'])
    mv, vv = summary(v['participants'], v['sum'], v['sumOfSquares'])
    var = vv / v['participants'] + vc / c['participants']
    tau2 = (0.1 ** 2) * (vv + vc) / 2
    d = mv - mc
    scale = 100 * math.sqrt(var)
    sequences.append({'control': c, 'variant': v, 'alpha': 0.05, 'effectSize': 0.1,
                      'lower': r(sequence_bound(d, var, tau2, 0.05, -1, scale)), 'upper': r(sequence_bound(d, var, tau2, 0.05, 1, scale)),
                      'pValue': r(min(1.0, math.exp(-log_ratio(d, 0, var, tau2))))})

# --- participants still needed for a stated effect, split as now
needed = []
for (nv, vv, nc, vc, effect) in [(500, 2.2, 500, 1.96, 0.2), (100, 0.09, 300, 0.09, 0.01), (5000, 1.0, 5000, 1.0, 0.5)]:
    share = nv / (nv + nc)
    total = math.ceil((Z975 + Z80) ** 2 / effect ** 2 * (vv / share + vc / (1 - share)))
    needed.append({'variant': {'participants': nv, 'variance': vv}, 'control': {'participants': nc, 'variance': vc}, 'effect': effect,
                   'stillNeeded': max(0, total - nv - nc)})

# --- planning for a minimum effect relative to the control (rates: p(1 − p); means: s²), found as the
# smallest total N (split as now) whose normal power Φ(δ/SE(N) − z₀.₉₇₅) reaches 80 %, by bisection on N
def smallest_total(vv, vc, share, effect):
    power = lambda total: phi(effect / math.sqrt(vv / (share * total) + vc / ((1 - share) * total)) - Z975)
    lo, hi = 1, 1
    while power(hi) < 0.8:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if power(mid) >= 0.8:
            hi = mid
        else:
            lo = mid + 1
    return lo

def planned(nv, vv, nc, vc, control_value, minimum_effect):
    if control_value <= 0 or vv + vc == 0:
        return None
    return max(0, smallest_total(vv, vc, nv / (nv + nc), minimum_effect * control_value) - nv - nc)

planning = []
for (nc, xc, nv, xv, effect) in [(1000, 100, 1000, 130, 0.2), (5000, 400, 5000, 420, 0.05), (200, 30, 180, 18, 0.1), (1000, 0, 1000, 5, 0.1), (1000, 100, 1000, 130, 2)]:
    pv, pc = xv / nv, xc / nc
    planning.append({'metric': 'rate', 'minimumEffect': effect,
                     'control': {'participants': nc, 'uniqueConversions': xc}, 'variant': {'participants': nv, 'uniqueConversions': xv},
                     'participantsNeeded': planned(nv, pv * (1 - pv), nc, pc * (1 - pc), pc, effect)})
for (nc, sc, s2c, nv, sv, s2v, effect) in [(500, 900, 2600, 500, 1000, 3100, 0.05), (400, 2000, 60000, 400, 2400, 75000, 0.1),
                                           (1000, -250, 9000, 1200, 120, 11000, 0.1), (500, 900, 2600, 500, 1000, 3100, 0.5), (120, 3050.25, 160000.5, 95, 3400.75, 250000.125, 0.02)]:
    mc, vc = summary(nc, sc, s2c)
    mv, vv = summary(nv, sv, s2v)
    planning.append({'metric': 'mean', 'minimumEffect': effect,
                     'control': {'participants': nc, 'sum': sc, 'sumOfSquares': s2c}, 'variant': {'participants': nv, 'sum': sv, 'sumOfSquares': s2v},
                     'participantsNeeded': planned(nv, vv, nc, vc, mc, effect)})

# --- multiplicity: Holm and Benjamini–Hochberg adjusted p-values, by their definitions (max / min over the ranks)
def holm(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    out = [None] * m
    for rank, i in enumerate(order):
        out[i] = min(1.0, max(min(1.0, ps[order[j]] * (m - j)) for j in range(rank + 1)))
    return out

def bh(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    out = [None] * m
    for rank, i in enumerate(order):
        out[i] = min(1.0, min(ps[order[j]] * m / (j + 1) for j in range(rank, m)))
    return out

multiplicity = [{'pValues': ps, 'holm': [r(x) for x in holm(ps)], 'benjaminiHochberg': [r(x) for x in bh(ps)]}
                for ps in [[0.01, 0.04, 0.03, 0.005], [0.2, 0.001, 0.049, 0.5, 0.012, 0.03], [0.04], [0.3, 0.3, 0.01]]]

print(json.dumps({'source': 'test/vectors/means.py (pure Python: Simpson-integrated t density, exact Fisher, bisection on the mSPRT ratio)',
                  'rates': rates, 'means': means, 'meanSequences': sequences, 'participantsNeeded': needed, 'planning': planning, 'multiplicity': multiplicity, 'largeValues': large_values}, indent=1))
