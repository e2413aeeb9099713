# Safe-rollout arm test vectors, from the published rule alone (the rollout seed's digest, as the
# experiments' assignment: bucket b of 10 000; `new` when b < round(share × 100), `current` when
# b ≥ 10 000 − round(share × 100), else no arm).
#   python3 test/vectors/rollout-arms.py > test/vectors/rollout-arms.json
import hashlib, json, random

def bucket(seed, participant):
    h = int.from_bytes(hashlib.sha256((seed + ':' + participant).encode('utf-8')).digest()[0:4], 'big')
    return h * 10000 // 2**32

def arm(seed, participant, share):
    width = round(share * 100)
    b = bucket(seed, participant)
    if b < width:
        return 'new'
    return 'current' if b >= 10000 - width else None

rng = random.Random(42)
cases = []
for i in range(60):
    seed = '%032x' % rng.getrandbits(128)
    participant = rng.choice(['user-%d' % rng.randrange(10**6), 'zoë-%d' % i, '%08x' % rng.getrandbits(32)])
    share = rng.choice([0, 0.5, 1, 5, 10, 25, 33.33, 50, 100])
    cases.append({'seed': seed, 'participant': participant, 'share': share, 'bucket': bucket(seed, participant), 'arm': arm(seed, participant, share)})
print(json.dumps({'description': 'rollout arms by the published rule, written by test/vectors/rollout-arms.py', 'cases': cases}, ensure_ascii=False, indent=1))
