# Targeting vectors — 10 000-bucket assignment (hash version 2), coverage and exclusion groups —
# computed from the published rules (openapi/components/schemas/Config.yaml) with Python's own
# SHA-256 and integer arithmetic, independently of domain. Run:
#   python3 test/vectors/targeting.py > test/vectors/targeting.json
# test/domain/targeting.test.ts replays the file against domain and checks that this
# script still prints it.
import hashlib, json

def u32(digest, offset):
    return int.from_bytes(digest[offset:offset + 4], 'big')

def scaled(h, units):
    return h * units // 2 ** 32

def assignment_digest(seed, participant):
    return hashlib.sha256(seed.encode('utf-8') + b':' + participant.encode('utf-8')).digest()

def bucket(seed, participant, version):
    return scaled(u32(assignment_digest(seed, participant), 0), 100 if version == 1 else 10000)

def coverage_position(seed, participant):
    return scaled(u32(assignment_digest(seed, participant), 4), 10000)

def group_position(group, participant):
    return scaled(u32(hashlib.sha256(group.encode('utf-8') + b'/' + participant.encode('utf-8')).digest(), 0), 10000)

def hundredths(percent):
    return round(percent * 100)

def choose(variants, b, version):
    per_percent = 1 if version == 1 else 100
    cumulative = 0
    for v in variants:
        cumulative += v['traffic'] * per_percent
        if b < cumulative:
            return v['key']
    return None

def place(case):
    group = case['exclusion_group']
    if group is not None:
        g = group_position(group['key'], case['participant'])
        if not (hundredths(group['start']) <= g < hundredths(group['end'])):
            return None
    if coverage_position(case['seed'], case['participant']) >= hundredths(case['coverage']):
        return None
    return choose(case['variants'], bucket(case['seed'], case['participant'], case['hash_version']), case['hash_version'])

SEED = '3b9e2f70c41d58a6e0f9d2c7b1a84e63'
OTHER_SEED = 'a07c5d19e82b4f36c1d0e9f8a7b65c42'
HALVES = [{'key': 'control', 'traffic': 50}, {'key': 'treatment', 'traffic': 50}]
THREE = [{'key': 'a', 'traffic': 33}, {'key': 'b', 'traffic': 33}, {'key': 'c', 'traffic': 34}]
SHORT = [{'key': 'control', 'traffic': 40}, {'key': 'treatment', 'traffic': 40}]

def find(predicate, prefix='participant-'):
    i = 0
    while True:
        key = f'{prefix}{i}'
        if predicate(key):
            return key
        i += 1

buckets = []
def bucket_case(name, seed, participant, variants, version=2):
    b = bucket(seed, participant, version)
    buckets.append({'name': name, 'seed': seed, 'participant': participant, 'hash_version': version, 'variants': variants,
                    'bucket': b, 'variant': choose(variants, b, version)})

for target, variants, label in [(0, HALVES, 'lowest bucket'), (4999, HALVES, 'last bucket of control in a 50/50 split'),
                                (5000, HALVES, 'first bucket of treatment in a 50/50 split'), (9999, HALVES, 'highest bucket'),
                                (3299, THREE, 'last bucket of a in 33/33/34'), (3300, THREE, 'first bucket of b in 33/33/34'),
                                (6600, THREE, 'first bucket of c in 33/33/34'), (7999, SHORT, 'last bucket of shares summing to 80'),
                                (8000, SHORT, 'first bucket past shares summing to 80')]:
    key = find(lambda k: bucket(SEED, k, 2) == target)
    bucket_case(f'when the 10 000-bucket bucket is {target} ({label}), then {choose(variants, target, 2)}', SEED, key, variants)
for participant in ['José', '用户-42', 'emoji-😀-key', 'x' * 255]:
    bucket_case(f'when the key is {participant[:20]!r} (UTF-8 bytes hashed), then the bucket is its 10 000-bucket one', OTHER_SEED, participant, HALVES)
# The same keys under version 1: the old rule, unchanged.
for participant in ['participant-119', 'participant-50']:
    bucket_case(f'when hash version 1 buckets {participant}, then the bucket is 0–99', '8c3f1e0a9b7d4c2e6f5a1b3d0e9c8f7a', participant, HALVES, 1)

coverage = []
def coverage_case(name, participant, percent):
    p = coverage_position(SEED, participant)
    coverage.append({'name': name, 'seed': SEED, 'participant': participant, 'coverage': percent, 'position': p, 'covered': p < hundredths(percent)})

for position, percent in [(1999, 20), (2000, 20), (9, 0.1), (10, 0.1), (0, 0), (9999, 100), (3332, 33.33), (3333, 33.33)]:
    key = find(lambda k: coverage_position(SEED, k) == position)
    inside = position < hundredths(percent)
    coverage_case(f'when the coverage position is {position} and coverage {percent} %, then {"covered" if inside else "not covered"}', key, percent)

groups = []
GROUP = 'checkout_tests'
for position, start, end in [(0, 0, 50), (4999, 0, 50), (5000, 0, 50), (5000, 50, 100), (9999, 50, 100), (1234, 12.34, 12.35), (1235, 12.34, 12.35)]:
    key = find(lambda k: group_position(GROUP, k) == position)
    inside = hundredths(start) <= position < hundredths(end)
    groups.append({'name': f'when the group position is {position} and the range [{start}, {end}), then {"inside" if inside else "outside"}',
                   'group': GROUP, 'participant': key, 'position': position, 'start': start, 'end': end, 'inside': inside})

overlaps = []
for a, b in [((0, 50), (50, 100)), ((0, 50.01), (50, 100)), ((10, 20), (0, 100)), ((0, 0.01), (0.01, 0.02)), ((30, 40), (39.99, 45))]:
    overlap = hundredths(a[0]) < hundredths(b[1]) and hundredths(b[0]) < hundredths(a[1])
    overlaps.append({'name': f'when [{a[0]}, {a[1]}) and [{b[0]}, {b[1]}) are ranges of one group, then they {"overlap" if overlap else "do not overlap"}',
                     'a': {'start': a[0], 'end': a[1]}, 'b': {'start': b[0], 'end': b[1]}, 'overlap': overlap})

placements = []
def placement(name, participant, coverage_percent, group, variants=HALVES, version=2):
    case = {'name': name, 'seed': SEED, 'hash_version': version, 'participant': participant, 'coverage': coverage_percent,
            'exclusion_group': group, 'variants': variants}
    case['variant'] = place(case)
    placements.append(case)

inside_both = find(lambda k: coverage_position(SEED, k) < 2000 and 0 <= group_position(GROUP, k) < 5000)
outside_group = find(lambda k: coverage_position(SEED, k) < 2000 and group_position(GROUP, k) >= 5000)
outside_coverage = find(lambda k: coverage_position(SEED, k) >= 2000 and group_position(GROUP, k) < 5000)
ramped = find(lambda k: 2000 <= coverage_position(SEED, k) < 5000)
half = {'key': GROUP, 'start': 0, 'end': 50}
placement('when the participant is inside the group range and the coverage, then it gets the variant of its bucket', inside_both, 20, half)
placement('when the participant is outside the group range, then it enters no experiment of that range', outside_group, 20, half)
placement('when the participant is outside the coverage, then it does not enter', outside_coverage, 20, half)
placement('when coverage is 20 % and the position is between 20 and 50 %, then it does not enter', ramped, 20, None)
placement('when coverage is raised to 50 %, then the same participant enters', ramped, 50, None)
placement('when coverage is 100 % and there is no group, then everyone enters with the variant of its bucket', outside_coverage, 100, None)
placement('when coverage is 0 %, then nobody enters', inside_both, 0, None)
placement('when the hash version is 1, then coverage still applies and the bucket is 0–99', inside_both, 20, None, HALVES, 1)

print(json.dumps({
    'source': 'test/vectors/targeting.py (hashlib SHA-256, integer arithmetic)',
    'description': 'Targeting vectors. Assignment digest D = SHA-256(UTF-8(seed) || 0x3A || UTF-8(participant)). '
                   'Bucket = floor(u32be(D[0..3]) * N / 2^32), N = 100 (hash_version 1) or 10000 (hash_version 2); the first variant whose '
                   'cumulative share * N / 100 exceeds the bucket, else null. Coverage position = floor(u32be(D[4..7]) * 10000 / 2^32), '
                   'covered when position < coverage * 100. Group position = floor(u32be(SHA-256(UTF-8(group) || 0x2F || UTF-8(participant))[0..3]) '
                   '* 10000 / 2^32), inside [start, end) when start * 100 <= position < end * 100. A participant enters when inside its '
                   'group range (if any) and covered, and then gets the variant of its bucket.',
    'buckets': buckets, 'coverage': coverage, 'groups': groups, 'overlaps': overlaps, 'placements': placements,
}, indent=2, ensure_ascii=False))
