# Reference values for domain/sequential.ts, computed another way: not from the closed form
# of the confidence sequence, but by bisection on the mixture likelihood ratio of the mSPRT
# (Johari, Pekelis & Walsh), Λ(θ0) = √(V / (V + τ²)) · exp(τ² (θ̂ − θ0)² / (2 V (V + τ²))): the
# sequence's bounds are the θ0 where Λ(θ0) = 1/α (compared in logs). τ is tuned on the standardised
# scale, τ = effect size · √((p_V(1 − p_V) + p_C(1 − p_C))/2). Run: python3 test/vectors/sequential.py
import json, math

def log_likelihood_ratio(theta_hat, theta0, v, tau2):
    return 0.5 * math.log(v / (v + tau2)) + tau2 * (theta_hat - theta0) ** 2 / (2 * v * (v + tau2))

def bound(theta_hat, v, tau2, alpha, direction):
    inside, outside = theta_hat, theta_hat + direction
    for _ in range(200):
        middle = (inside + outside) / 2
        if log_likelihood_ratio(theta_hat, middle, v, tau2) < math.log(1 / alpha):
            inside = middle
        else:
            outside = middle
    return (inside + outside) / 2

cases = []
for (nv, xv, nc, xc, alpha, effect_size) in [
    (1000, 120, 1000, 100, 0.05, 0.1),
    (500, 60, 520, 48, 0.05, 0.1),
    (20000, 2150, 20000, 2000, 0.05, 0.1),
    (20000, 2150, 20000, 2000, 0.10, 0.2),
    (100, 3, 100, 1, 0.05, 0.1),
    (3000, 900, 2900, 880, 0.01, 0.05),
    (50000, 540, 50000, 500, 0.05, 0.1),
    (100, 0, 100, 1, 0.05, 0.1),
]:
    pv, pc = xv / nv, xc / nc
    v = pv * (1 - pv) / nv + pc * (1 - pc) / nc
    tau = effect_size * math.sqrt((pv * (1 - pv) + pc * (1 - pc)) / 2)
    theta_hat = pv - pc
    cases.append({
        'arm': {'participants': nv, 'uniqueConversions': xv},
        'control': {'participants': nc, 'uniqueConversions': xc},
        'alpha': alpha, 'effectSize': effect_size,
        'lower': round(bound(theta_hat, v, tau * tau, alpha, -1), 10),
        'upper': round(bound(theta_hat, v, tau * tau, alpha, +1), 10),
    })
print(json.dumps({'source': 'test/vectors/sequential.py (bisection on the mSPRT likelihood ratio)', 'cases': cases}, indent=2))
