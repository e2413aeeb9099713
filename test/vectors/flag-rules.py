# Flag-rule test vectors, and an implementation of the published rules (the contract's
# FeatureRules, RolloutRule, ExperimentRule, and the team config's targeting and assignment:
# conditions, exclusion group, coverage, hash versions) written from their text alone, for conditions of equality, $in, $nin, $ne, $gt, $gte, $lt, $lte and $exists.
#   python3 test/vectors/flag-rules.py > test/vectors/flag-rules.json   writes the vectors
#   python3 test/vectors/flag-rules.py --check test/vectors/flag-rules.json   replays a file
import hashlib, json, sys
from datetime import datetime

def scaled(text, offset, units):
    h = int.from_bytes(hashlib.sha256(text.encode('utf-8')).digest()[offset:offset + 4], 'big')
    return h * units // 2**32

def bucket(seed, key, buckets, separator=':'):
    return scaled(seed + separator + key, 0, buckets)

def hundredths(percent):
    return round(percent * 100)

def placement(experiment, participant, attributes):
    """(variant key or None, reason): the first check that fails is the reason."""
    if not matches(experiment['conditions'], attributes):
        return None, 'conditions'
    group = experiment['exclusion_group']
    if group is not None and not hundredths(group['start']) <= scaled(group['key'] + '/' + participant, 0, 10000) < hundredths(group['end']):
        return None, 'exclusion_group'
    digest = experiment['seed'] + ':' + participant
    if not scaled(digest, 4, 10000) < hundredths(experiment['coverage']):
        return None, 'coverage'
    buckets = {1: 100, 2: 10000}[experiment['hash_version']]
    b, cumulative = scaled(digest, 0, buckets), 0
    for variant in experiment['variants']:
        cumulative += variant['traffic'] * buckets // 100
        if b < cumulative:
            return variant['key'], 'assigned'
    return None, 'no_variant'

def matches(condition, attributes):
    for name, wanted in condition.items():
        if name == '$and':
            if not all(matches(c, attributes) for c in wanted): return False
        elif name == '$or':
            if wanted and not any(matches(c, attributes) for c in wanted): return False
        elif isinstance(wanted, dict):
            value = attributes.get(name)
            for op, operand in wanted.items():
                if not operator(op, value, operand, name in attributes): return False
        elif attributes.get(name) != wanted:
            return False
    return True

def operator(op, value, operand, present):
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(operand, (int, float))
    if op == '$eq': return value == operand
    if op == '$ne': return value != operand
    if op == '$in': return value in operand
    if op == '$nin': return value not in operand
    if op == '$exists': return present == operand
    if op in ('$gt', '$gte', '$lt', '$lte') and numeric:
        return {'$gt': value > operand, '$gte': value >= operand, '$lt': value < operand, '$lte': value <= operand}[op]
    raise ValueError(f'{op} on {value!r} is outside what this implementation covers')

def moment(text):
    return datetime.fromisoformat(text.replace('Z', '+00:00'))

def scheduled(rule, now):
    if rule.get('starts_at') is not None and now < moment(rule['starts_at']): return False
    return rule.get('ends_at') is None or now < moment(rule['ends_at'])

def served(rule, flag_key, participant, attributes, now, variants):
    if not scheduled(rule, now): return None
    if 'conditions' in rule and not matches(rule['conditions'], attributes): return None
    if rule['type'] == 'force': return (rule['value'],)
    if rule['type'] == 'rollout':
        return (rule['value'],) if bucket(flag_key, participant, 10000, '#') < round(rule['percentage'] * 100) else None
    variant = variants.get(rule['experiment'])
    return (rule['variants'][variant],) if variant is not None and variant in rule['variants'] else None

def evaluate(config, participant, attributes, now):
    placed = {e['key']: placement(e, participant, attributes) for e in config['experiments']}
    experiments = {key: variant for key, (variant, _) in placed.items()}
    features = {}
    for flag in config['features']:
        if not flag['enabled']:
            features[flag['key']] = {'value': None, 'reason': 'disabled', 'rule': None}
            continue
        features[flag['key']] = {'value': flag['value'], 'reason': 'default', 'rule': None}
        for index, rule in enumerate(flag['rules']):
            value = served(rule, flag['key'], participant, attributes, moment(now), experiments)
            if value is not None:
                features[flag['key']] = {'value': value[0], 'reason': 'rule', 'rule': index}
                break
    return {'features': features, 'experiments': experiments, 'experiment_reasons': {key: reason for key, (_, reason) in placed.items()}}

NOW = '2026-11-24T12:00:00.000Z'
PAST, FUTURE = '2000-01-01T00:00:00.000Z', '2999-01-01T00:00:00.000Z'
def experiment(key, seed, traffic=(50, 50), conditions=None, coverage=100, group=None):
    names = ['control', 'treatment', 'third']
    return {'key': key, 'seed': seed, 'hash_version': 2, 'conditions': conditions or {}, 'coverage': coverage, 'exclusion_group': group,
            'event': 'purchase', 'variants': [{'key': names[i], 'control': i == 0, 'traffic': t} for i, t in enumerate(traffic)]}

CHECKOUT = experiment('checkout_test', '5f0c2d9e8b7a41c3a6e4d2b1f0e9c8a7')
# Two exclusive checkout tests: one exclusion group, each holding half of its hash space.
BUTTON = experiment('checkout_button', '0a1b2c3d4e5f60718293a4b5c6d7e8f9', group={'key': 'checkout', 'start': 0, 'end': 50})
COPY = experiment('checkout_copy', 'f9e8d7c6b5a4938271605f4e3d2c1b0a', traffic=(34, 33, 33), group={'key': 'checkout', 'start': 50, 'end': 100})
# An experiment for one country, on a fifth of the participants.
GERMAN = experiment('german_pricing', '00112233445566778899aabbccddeeff', conditions={'country': 'DE'}, coverage=20.5)

def flag(key, rules, value='off', enabled=True):
    return {'key': key, 'enabled': enabled, 'value': value, 'rules': rules}

def config(*features, experiments=()):
    return {'team': 1, 'experiments': list(experiments), 'features': list(features)}

EDGE = bucket('edge', 'edge-user', 10000, '#')

SCENARIOS = [
    ('a disabled flag serves null whatever its rules', config(flag('f', [{'type': 'force', 'value': 'on'}], enabled=False)), [('u1', {})]),
    ('an enabled flag without rules serves its own value', config(flag('f', [], value='mine')), [('u1', {})]),
    ('a force rule serves the participants its conditions match',
     config(flag('f', [{'type': 'force', 'conditions': {'country': {'$in': ['DE', 'AT']}}, 'value': 'dach'}])),
     [('u1', {'country': 'DE'}), ('u1', {'country': 'FR'}), ('u1', {})]),
    ('the first rule that applies wins',
     config(flag('f', [{'type': 'force', 'conditions': {'plan': 'pro'}, 'value': 'pro'}, {'type': 'force', 'value': 'all'}, {'type': 'force', 'value': 'never'}])),
     [('u1', {'plan': 'pro'}), ('u1', {'plan': 'free'})]),
    ('a schedule applies from starts_at until ends_at',
     config(flag('f', [{'type': 'force', 'starts_at': FUTURE, 'value': 'later'}, {'type': 'force', 'ends_at': PAST, 'value': 'over'},
                       {'type': 'force', 'starts_at': PAST, 'ends_at': FUTURE, 'value': 'now'}])),
     [('u1', {})]),
    ('a 5 % rollout to one country',
     config(flag('new_checkout', [{'type': 'rollout', 'conditions': {'country': 'DE'}, 'percentage': 5, 'value': 'on'}])),
     [(f'visitor-{i}', {'country': 'DE' if i % 4 else 'FR'}) for i in range(40)]),
    ('a rollout at 10 %', config(flag('ramp', [{'type': 'rollout', 'percentage': 10, 'value': 'on'}])), [(f'user-{i}', {}) for i in range(30)]),
    ('the same rollout at 50 %', config(flag('ramp', [{'type': 'rollout', 'percentage': 50, 'value': 'on'}])), [(f'user-{i}', {}) for i in range(30)]),
    ('a rollout at 12.25 % with a numeric condition',
     config(flag('quarter', [{'type': 'rollout', 'conditions': {'age': {'$gte': 18}}, 'percentage': 12.25, 'value': 'on'}])),
     [(f'user-{i}', {'age': 15 + i}) for i in range(20)]),
    ('an experiment rule serves the value of the variant, and falls through for a variant without one',
     config(flag('checkout', [{'type': 'experiment', 'experiment': 'checkout_test', 'variants': {'treatment': 'one_page'}},
                              {'type': 'force', 'value': 'fallback'}]), experiments=[CHECKOUT]),
     [(f'buyer-{i}', {}) for i in range(12)]),
    ('an experiment rule whose experiment is not in the config does not apply',
     config(flag('checkout', [{'type': 'experiment', 'experiment': 'gone', 'variants': {'control': 'x'}}], value='default'))),
    ('two exclusive checkout tests, each flag served by its own test',
     config(flag('button', [{'type': 'experiment', 'experiment': 'checkout_button', 'variants': {'control': 'grey', 'treatment': 'green'}}]),
            flag('copy', [{'type': 'experiment', 'experiment': 'checkout_copy', 'variants': {'control': 'plain', 'treatment': 'friendly', 'third': 'short'}}]),
            experiments=[BUTTON, COPY]),
     [(f'shopper-{i}', {}) for i in range(24)]),
    ('an experiment rule of a targeted experiment (conditions and coverage): the others fall through',
     config(flag('pricing', [{'type': 'experiment', 'experiment': 'german_pricing', 'variants': {'control': 'eur', 'treatment': 'eur_rounded'}}], value='usd'),
            experiments=[GERMAN]),
     [(f'buyer-{i}', {'country': 'DE' if i % 3 else 'FR'}) for i in range(30)]),
    # The boundary: a participant whose rollout bucket is b is out at b/100 % and in at (b+1)/100 %.
    ('a rollout whose threshold equals the bucket leaves the participant out',
     config(flag('edge', [{'type': 'rollout', 'percentage': EDGE / 100, 'value': 'on'}])), [('edge-user', {})]),
    ('a rollout one bucket above lets the participant in',
     config(flag('edge', [{'type': 'rollout', 'percentage': (EDGE + 1) / 100, 'value': 'on'}])), [('edge-user', {})]),
    ('two flags, each by its own rollout hash',
     config(flag('alpha', [{'type': 'rollout', 'percentage': 50, 'value': 'on'}]), flag('beta', [{'type': 'rollout', 'percentage': 50, 'value': 'on'}])),
     [(f'user-{i}', {}) for i in range(10)]),
]

def vectors():
    cases = []
    for name, cfg, *rest in SCENARIOS:
        participants = rest[0] if rest else [('u1', {})]
        cases.append({'name': name, 'config': cfg, 'now': NOW, 'participants': [
            {'key': key, 'attributes': attributes, 'expected': evaluate(cfg, key, attributes, NOW)} for key, attributes in participants]})
    return {'description': 'Flag-rule vectors: for each case and each of its participants, the Evaluation of `config` '
                           'for the participant (key, attributes) at `now`. Written and checked by '
                           'test/vectors/flag-rules.py, an implementation of the published rules.', 'cases': cases}

if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--check':
        checks = [(c, p) for c in json.load(open(sys.argv[2]))['cases'] for p in c['participants']]
        wrong = [c['name'] + ' / ' + p['key'] for c, p in checks if evaluate(c['config'], p['key'], p['attributes'], c['now']) != p['expected']]
        print(f'{len(checks) - len(wrong)} of {len(checks)} evaluations agree' + ''.join('\n  disagrees: ' + w for w in wrong))
        sys.exit(1 if wrong else 0)
    print(json.dumps(vectors(), indent=1))
