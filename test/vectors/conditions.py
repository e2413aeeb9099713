# An independent implementation of the condition language (openapi/components/schemas/Condition.yaml)
# in Python, written from the contract's description: JavaScript's conversions (String, Number,
# truthiness, the relational operators, JSON.stringify) are spelled out here rather than borrowed.
# It evaluates every case of test/vectors/conditions.json and prints [{"name", "result"}] as JSON.
# Run: python3 test/vectors/conditions.py [vectors.json]
import json
import math
import re
import sys
from pathlib import Path

MISSING = None  # a path that leads nowhere yields null
STEP_LIMIT = 20000  # steps one evaluation may take; past them the condition does not hold
PATTERN_STEP_WEIGHT = 4  # a pattern's steps per character and instruction


class Exhausted(Exception):
    pass


class Steps:
    """The contract's count of an evaluation's work; `instructions` gives each pattern's RE2 instruction count."""

    def __init__(self, instructions):
        self.taken = 0
        self.instructions = instructions

    def take(self, count):
        self.taken += count
        if self.taken > STEP_LIMIT:
            raise Exhausted()

    def text(self, v):
        s = js_string(v)
        if isinstance(v, (list, dict)):
            self.take(utf16_length(s))
        return s


def utf16_length(s):
    return len(s.encode('utf-16-le')) // 2


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# JavaScript's Number::toString: shortest round-trip digits, decimal between 1e-7 and 1e21.
def number_string(x):
    x = float(x)
    if math.isnan(x):
        return 'NaN'
    if x == 0:
        return '0'
    if math.isinf(x):
        return 'Infinity' if x > 0 else '-Infinity'
    if x < 0:
        return '-' + number_string(-x)
    shortest = repr(x)  # Python's repr is the shortest string that reads back, as JavaScript's
    mantissa, _, exponent = shortest.partition('e')
    whole, _, fraction = mantissa.partition('.')
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)  # the value is 0.<digits> × 10^point
    leading_zeros = len(digits) - len(digits.lstrip('0'))
    digits, point = digits[leading_zeros:].rstrip('0'), point - leading_zeros
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + '0' * (n - k)
    if 0 < n <= 21:
        return digits[:n] + '.' + digits[n:]
    if -6 < n <= 0:
        return '0.' + '0' * (-n) + digits
    e = n - 1
    sign = '+' if e >= 0 else '-'
    return (digits[0] + ('.' + digits[1:] if k > 1 else '')) + 'e' + sign + str(abs(e))


def js_string(v):
    if v is None:
        return 'null'
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if is_number(v):
        return number_string(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ','.join('' if e is None else js_string(e) for e in v)
    return '[object Object]'


JS_SPACE = '\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff'
DECIMAL = re.compile(r'[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?')
RADIX = {'0x': 16, '0X': 16, '0o': 8, '0O': 8, '0b': 2, '0B': 2}


def string_to_number(s):
    s = s.strip(JS_SPACE)
    if s == '':
        return 0.0
    if s in ('Infinity', '+Infinity'):
        return math.inf
    if s == '-Infinity':
        return -math.inf
    if s[:2] in RADIX:
        try:
            return float(int(s[2:], RADIX[s[:2]])) if re.fullmatch(r'[0-9a-fA-F]+', s[2:]) else math.nan
        except ValueError:
            return math.nan
    return float(s) if DECIMAL.fullmatch(s) else math.nan


def js_number(v):
    if v is None or v is False:
        return 0.0
    if v is True:
        return 1.0
    if is_number(v):
        return float(v)
    if isinstance(v, str):
        return string_to_number(v)
    if isinstance(v, list):
        return string_to_number(js_string(v))
    return math.nan


def truthy(v):
    if v is None or v is False:
        return False
    if is_number(v):
        return not (v == 0 or math.isnan(v))
    if isinstance(v, str):
        return v != ''
    return True  # arrays and objects, even empty


def strictly_equal(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False  # arrays and objects are never the same reference


def code_units(s):
    return s.encode('utf-16-be')


def less_than(a, b):
    """JavaScript's abstract relational comparison a < b: True, False, or None (undefined, for NaN)."""
    if isinstance(a, str) and isinstance(b, str):
        return code_units(a) < code_units(b)
    x, y = js_number(a), js_number(b)
    if math.isnan(x) or math.isnan(y):
        return None
    return x < y


def relation(a, op, b, steps):
    a = steps.text(a) if isinstance(a, (list, dict)) else a
    b = steps.text(b) if isinstance(b, (list, dict)) else b
    if op == '<':
        return less_than(a, b) is True
    if op == '>':
        return less_than(b, a) is True
    if op == '<=':
        return less_than(b, a) is False
    return less_than(a, b) is False  # '>='


ARRAY_INDEX = re.compile(r'0|[1-9][0-9]*')


def js_json(v):
    if v is None:
        return 'null'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if is_number(v):
        return number_string(v) if math.isfinite(float(v)) else 'null'
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return '[' + ','.join(js_json(e) for e in v) + ']'
    # JavaScript orders integer-like keys first, ascending, then the others as inserted
    index_keys = sorted((k for k in v if ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1), key=int)
    other_keys = [k for k in v if k not in index_keys]
    return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + js_json(v[k]) for k in index_keys + other_keys) + '}'


def value_at(subject, path):
    current = subject
    for part in path.split('.'):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part == 'length':
            current = len(current)
        elif isinstance(current, list) and ARRAY_INDEX.fullmatch(part) and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def padded_version(v):
    text = number_string(v) if is_number(v) else v if isinstance(v, str) and v != '' else '0'
    text = re.sub(r'^v', '', text)
    text = re.sub(r'\+[^\n\r\u2028\u2029]*\Z', '', text)  # JavaScript's . stops at line terminators
    parts = re.split(r'[-.]', text)
    if len(parts) == 3:
        parts.append('~')
    return '-'.join(p.rjust(5, ' ') if re.fullmatch(r'[0-9]+', p) else p for p in parts)


# RE2 has no lookaround and no backreferences; Python's re has both, so they are refused first.
NOT_RE2 = re.compile(r'\(\?<?[=!]|\\[1-9]')


def pattern_finds(pattern, value, insensitive, steps):
    text = steps.text(value)
    if not isinstance(pattern, str) or NOT_RE2.search(pattern):
        return False
    try:
        compiled = re.compile(pattern, re.IGNORECASE if insensitive else 0)
    except re.error:
        return False
    instructions = steps.instructions.get(('(?i)' if insensitive else '') + pattern)
    if instructions is None:
        return False  # a pattern the vector gives no count for is one RE2 refuses (e.g. over 500 instructions)
    steps.take((utf16_length(text) + 1) * instructions * PATTERN_STEP_WEIGHT)
    return compiled.search(text) is not None


def type_name(v):
    if v is None:
        return 'null'
    if isinstance(v, bool):
        return 'boolean'
    if is_number(v):
        return 'number'
    if isinstance(v, str):
        return 'string'
    if isinstance(v, list):
        return 'array'
    return 'object'


def is_operator_object(v):
    return isinstance(v, dict) and len(v) > 0 and all(k.startswith('$') for k in v)


def fold(v):
    return v.lower() if isinstance(v, str) else v


def is_in(actual, values, insensitive, steps):
    f = fold if insensitive else (lambda v: v)
    candidates = actual if isinstance(actual, list) else [actual]
    steps.take(len(candidates) + len(values))
    return any(strictly_equal(f(c), f(e)) for c in candidates for e in values)


def has_all(actual, expected, insensitive, steps):
    def tried(e, w):
        steps.take(1)
        return matches(e, w, insensitive, steps)
    return isinstance(actual, list) and all(any(tried(e, w) for e in actual) for w in expected)


def elem_match(actual, operand, steps):
    if not isinstance(actual, list):
        return False
    def test(e):
        steps.take(1)
        return matches(e, operand, False, steps) if is_operator_object(operand) else holds(operand, e, steps)
    return any(e is not None and test(e) for e in actual)


VERSION_OPS = {'$veq': '==', '$vne': '!=', '$vgt': '>', '$vgte': '>=', '$vlt': '<', '$vlte': '<='}


def compare_versions(a, op, b):
    x, y = code_units(padded_version(a)), code_units(padded_version(b))
    return {'==': x == y, '!=': x != y, '>': x > y, '>=': x >= y, '<': x < y, '<=': x <= y}[op]


def operator_holds(op, actual, operand, steps):
    if op == '$eq':
        return strictly_equal(actual, operand)
    if op == '$ne':
        return not strictly_equal(actual, operand)
    if op in ('$lt', '$lte', '$gt', '$gte'):
        return relation(actual, {'$lt': '<', '$lte': '<=', '$gt': '>', '$gte': '>='}[op], operand, steps)
    if op in VERSION_OPS:
        return compare_versions(actual, VERSION_OPS[op], operand)
    if op in ('$in', '$nin', '$ini', '$nini'):
        if not isinstance(operand, list):
            return False
        found = is_in(actual, operand, op in ('$ini', '$nini'), steps)
        return found if op in ('$in', '$ini') else not found
    if op in ('$all', '$alli'):
        return isinstance(operand, list) and has_all(actual, operand, op == '$alli', steps)
    if op == '$size':
        return isinstance(actual, list) and matches(len(actual), operand, False, steps)
    if op == '$elemMatch':
        return elem_match(actual, operand, steps)
    if op == '$exists':
        return (actual is not None) if truthy(operand) else (actual is None)
    if op == '$type':
        return type_name(actual) == operand
    if op == '$not':
        return not matches(actual, operand, False, steps)
    if op in ('$regex', '$regexi'):
        return pattern_finds(operand, actual, op == '$regexi', steps)
    return False


def matches(actual, expected, insensitive, steps):
    if isinstance(expected, str):
        if insensitive:
            return steps.text(actual).lower() == expected.lower()
        return steps.text(actual) == expected
    if isinstance(expected, bool):
        return actual is not None and truthy(actual) == expected
    if is_number(expected):
        return js_number(steps.text(actual) if isinstance(actual, (list, dict)) else actual) == float(expected)
    if expected is None:
        return actual is None
    if not is_operator_object(expected):
        left, right = js_json(actual), js_json(expected)
        steps.take(utf16_length(left))
        steps.take(utf16_length(right))
        return left == right
    for op, operand in js_entries(expected):
        steps.take(1)
        if not operator_holds(op, actual, operand, steps):
            return False
    return True


def js_entries(d):
    """An object's entries in JavaScript's order: integer-like keys first, ascending, then the others as inserted."""
    index_keys = sorted((k for k in d if ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1), key=int)
    return [(k, d[k]) for k in index_keys] + [(k, v) for k, v in d.items() if k not in index_keys]


def holds(condition, subject, steps):
    if not isinstance(condition, dict):
        return False
    for key, operand in js_entries(condition):
        steps.take(1)
        if key == '$and':
            ok = isinstance(operand, list) and all(holds(c, subject, steps) for c in operand)
        elif key == '$or':
            ok = isinstance(operand, list) and (len(operand) == 0 or any(holds(c, subject, steps) for c in operand))
        elif key == '$nor':
            ok = isinstance(operand, list) and not (len(operand) == 0 or any(holds(c, subject, steps) for c in operand))
        elif key == '$not':
            ok = not holds(operand, subject, steps)
        elif key.startswith('$'):
            ok = False
        else:
            ok = matches(value_at(subject, key), operand, False, steps)
        if not ok:
            return False
    return True


def evaluate(condition, attributes, instructions=None):
    try:
        return holds(condition, attributes, Steps(instructions or {}))
    except (RecursionError, Exhausted):
        return False


if __name__ == '__main__':
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name('conditions.json')
    cases = json.loads(source.read_text(encoding='utf-8'))['cases']
    print(json.dumps([{'name': c['name'], 'result': evaluate(c['condition'], c['attributes'], c.get('instructions'))} for c in cases], ensure_ascii=False))
