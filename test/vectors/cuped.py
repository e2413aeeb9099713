# Reference values for domain/cuped.ts (regression adjustment, CUPED), computed another way in
# pure Python: from each participant's own (x, y) in exact fractions — θ from the pooled centred data,
# each arm's adjusted variance as the variance of the participants' y − θx (two passes, not the sums'
# formula), gbstats' delta method for the relative uplift — and the Student t distribution from the
# regularised incomplete beta function by its continued fraction (quantiles by bisection).
# Datasets are drawn from seeded generators. Run: python3 test/vectors/cuped.py > test/vectors/cuped.json
import json, math, random
from fractions import Fraction as F

MICROS = 10 ** 6

def incomplete_beta(a, b, x):
    # I_x(a, b) by the continued fraction (modified Lentz), on the side where it converges fast.
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - incomplete_beta(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    f, c, d = 1.0, 1.0, 0.0
    for i in range(0, 400):
        m = i // 2
        if i == 0:
            numerator = 1.0
        elif i % 2 == 0:
            numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            numerator = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1 + numerator * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + numerator / (c if abs(c) > tiny else tiny)
        f *= c * d
        if abs(1 - c * d) < 1e-16:
            break
    return front * (f - 1)

def t_two_sided(t, dof):
    return incomplete_beta(dof / 2, 0.5, dof / (dof + t * t))

def t_quantile_975(dof):
    lo, hi = 0.0, 50.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided(mid, dof) > 0.05:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2

def phi(z):
    return 0.5 * math.erfc(-z / math.sqrt(2))

def mean(values):
    return sum(values, F(0)) / len(values)

def variance(values, scale):
    m = mean(values)
    squares = sum(((v - m) ** 2 for v in values), F(0))
    return squares / (len(values) - 1 if scale == 'mean' else len(values))

def covariance(xs, ys, scale):
    mx, my = mean(xs), mean(ys)
    products = sum(((x - mx) * (y - my) for x, y in zip(xs, ys)), F(0))
    return products / (len(xs) - 1 if scale == 'mean' else len(xs))

def r(value):
    return None if value is None else float(f'{float(value):.12g}')

def compare(control, variant, scale):
    # control, variant: lists of (x, y) as Fractions. None where the service falls back to the unadjusted figures.
    both = control + variant
    xs, ys = [p[0] for p in both], [p[1] for p in both]
    if variance(xs, 'mean') == 0 or variance(ys, 'mean') == 0:
        return None
    theta = covariance(xs, ys, 'mean') / variance(xs, 'mean')
    arms = []
    for arm in (control, variant):
        x, y = [p[0] for p in arm], [p[1] for p in arm]
        adjusted = [b - theta * a for a, b in arm]
        arms.append({'n': len(arm), 'x': x, 'y': y, 'mean_y': mean(y), 'adjusted_mean': mean(adjusted),
                     'var_y': variance(y, scale), 'var_x': variance(x, scale), 'cov': covariance(x, y, scale), 'var_adjusted': variance(adjusted, scale)})
    c, v = arms
    a, b = v['var_adjusted'] / v['n'], c['var_adjusted'] / c['n']
    dof = float((a + b) ** 2 / (a * a / (v['n'] - 1) + b * b / (c['n'] - 1)))
    se = math.sqrt(a + b)
    difference = v['adjusted_mean'] - c['adjusted_mean']
    q = t_quantile_975(dof)
    unadjusted = v['var_y'] / v['n'] + c['var_y'] / c['n']
    expected = {
        'theta': r(theta), 'difference': r(difference), 'standardError': r(se), 'degreesOfFreedom': r(dof),
        'pValue': r(t_two_sided(float(difference) / se, dof)),
        'interval': {'lower': r(float(difference) - q * se), 'upper': r(float(difference) + q * se)},
        'chanceToBeatControl': r(phi(float(difference) / se)),
        'varianceReduction': r(1 - (a + b) / unadjusted),
        'relativeUplift': None, 'relativeStandardError': None, 'relativePValue': None, 'relativeInterval': None,
    }
    if c['mean_y'] > 0:
        # gbstats' delta method: the gradient of (adjusted difference) / ȳ_C at x̄_V = x̄_C.
        g = v['mean_y'] / c['mean_y']
        control_term = (g * g * c['var_y'] - 2 * g * theta * c['cov'] + theta * theta * c['var_x']) / (c['n'] * c['mean_y'] ** 2)
        relative_se = math.sqrt(v['var_adjusted'] / (v['n'] * c['mean_y'] ** 2) + control_term)
        uplift = float(difference / c['mean_y'])
        expected.update({'relativeUplift': r(uplift), 'relativeStandardError': r(relative_se), 'relativePValue': r(t_two_sided(uplift / relative_se, dof)),
                         'relativeInterval': {'lower': r(uplift - q * relative_se), 'upper': r(uplift + q * relative_se)}})
    return expected

def sums(arm):
    # The arm as the service keeps it: micro-units (squares and products in micro-units squared), as decimal text.
    xs = [int(x * MICROS) for x, _ in arm]
    ys = [int(y * MICROS) for _, y in arm]
    return {'participants': len(arm), 'sumY': str(sum(ys)), 'sumY2': str(sum(y * y for y in ys)), 'sumX': str(sum(xs)),
            'sumX2': str(sum(x * x for x in xs)), 'sumXY': str(sum(x * y for x, y in zip(xs, ys)))}

def cents(value):
    return F(round(value * 100), 100)

def value_arm(rng, n, lift):
    # Spend before and after: a participant's own level (lognormal) drives both, with noise; 30 % spent nothing before.
    arm = []
    for _ in range(n):
        level = math.exp(rng.gauss(2.5, 0.8))
        x = 0 if rng.random() < 0.3 else max(0, level + rng.gauss(0, 6))
        y = max(0, level * (1 + lift) + rng.gauss(0, 6))
        arm.append((cents(x), cents(y)))
    return arm

def poisson(rng, rate):
    k, p, limit = 0, 1.0, math.exp(-rate)
    while True:
        p *= rng.random()
        if p < limit:
            return k
        k += 1

def count_arm(rng, n, lift):
    arm = []
    for _ in range(n):
        rate = rng.expovariate(0.5)
        arm.append((F(poisson(rng, rate)), F(poisson(rng, rate * (1 + lift)))))
    return arm

def yes_no_arm(rng, n, before, after_if_before, after_otherwise):
    arm = []
    for _ in range(n):
        x = 1 if rng.random() < before else 0
        y = 1 if rng.random() < (after_if_before if x else after_otherwise) else 0
        arm.append((F(x), F(y)))
    return arm

def large_arm(rng, n, shift):
    # Values within cents of 10⁹: Σy² ≈ n·10¹⁸, where doubles keep none of the variance.
    arm = []
    for _ in range(n):
        x = F(10 ** 9) - F(rng.randrange(0, 4), 100)
        y = min(F(10 ** 9), x + F(rng.randrange(0, 3) + shift, 100))
        arm.append((x, y))
    return arm

def correlated_arm(rng, n, rho, lift):
    # y = 50 + 10(ρ·z₁ + √(1 − ρ²)·z₂) + lift, x = 50 + 10·z₁: corr(x, y) = ρ.
    arm = []
    for _ in range(n):
        z1, z2 = rng.gauss(0, 1), rng.gauss(0, 1)
        arm.append((cents(50 + 10 * z1), cents(50 + lift + 10 * (rho * z1 + math.sqrt(1 - rho * rho) * z2))))
    return arm

cases = []
def add(name, scale, control, variant):
    cases.append({'name': name, 'scale': scale, 'control': sums(control), 'variant': sums(variant), 'expected': compare(control, variant, scale)})

rng = random.Random(20261128)
add('value, spend before and after, seed 20261128', 'mean', value_arm(rng, 800, 0), value_arm(rng, 820, 0.05))
add('count, purchases before and after', 'mean', count_arm(rng, 600, 0), count_arm(rng, 650, 0.1))
add('yes/no, bought before and after', 'proportion', yes_no_arm(rng, 1500, 0.3, 0.5, 0.15), yes_no_arm(rng, 1400, 0.3, 0.55, 0.17))
add('value within cents of 10⁹', 'mean', large_arm(rng, 60, 0), large_arm(rng, 70, 1))
add('no covariate: nobody did anything before', 'mean', [(F(0), y) for _, y in value_arm(rng, 200, 0)], [(F(0), y) for _, y in value_arm(rng, 200, 0.1)])
add('refunds: the control\'s mean is negative', 'mean', [(x, y - 20) for x, y in value_arm(rng, 300, 0)], [(x, y - 19) for x, y in value_arm(rng, 300, 0)])

# A seeded simulation with a pre/post correlation of 0.5: the variance reduction achieved against ρ² = 0.25
# (the interval narrower by 1 − √(1 − ρ²) ≈ 13.4 %).
rho = 0.5
control, variant = correlated_arm(rng, 5000, rho, 0), correlated_arm(rng, 5000, rho, 0.5)
simulation = {'rho': rho, 'control': sums(control), 'variant': sums(variant), 'expected': compare(control, variant, 'mean')}

# Served end to end (test/ledger/cuped-served.test.ts writes each participant through the server): per
# participant, orders before and after (count) and spend before and after (value, in cents).
def served_arm(rng, n, lift):
    arm = []
    for _ in range(n):
        rate = rng.expovariate(0.6)
        level = math.exp(rng.gauss(2, 0.6))
        spent_before = cents(max(0, level + rng.gauss(0, 3))) if rng.random() < 0.7 else F(0)
        arm.append((F(poisson(rng, rate)), F(poisson(rng, rate * (1 + lift))), spent_before, cents(max(0, level * (1 + lift) + rng.gauss(0, 3)))))
    return arm

rng = random.Random(20261129)
served_control, served_variant = served_arm(rng, 24, 0), served_arm(rng, 26, 0.3)
served = {
    'control': [[str(v) for v in p] for p in served_control],
    'variant': [[str(v) for v in p] for p in served_variant],
    'expected': {
        'orders': compare([(p[0], p[1]) for p in served_control], [(p[0], p[1]) for p in served_variant], 'mean'),
        'spend': compare([(p[2], p[3]) for p in served_control], [(p[2], p[3]) for p in served_variant], 'mean'),
    },
}

print(json.dumps({'source': 'test/vectors/cuped.py (pure Python: exact fractions per participant, t from the incomplete beta continued fraction)',
                  'cases': cases, 'simulation': simulation, 'served': served}, indent=1))
