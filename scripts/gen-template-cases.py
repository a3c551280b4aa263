# Regenerates tests/unit/template_cases.json: each template rendered by jinja2 in the
# environment transformers uses (sandboxed, trim_blocks, lstrip_blocks, its tojson and
# raise_exception). Run from the repository root with jinja2 installed.
import json
from jinja2.sandbox import ImmutableSandboxedEnvironment as E
from jinja2.exceptions import TemplateError
def raise_exception(m): raise TemplateError(m)
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
e=E(trim_blocks=True,lstrip_blocks=True,extensions=['jinja2.ext.loopcontrols'])
from datetime import datetime
e.globals['strftime_now']=lambda f: datetime.now().strftime(f)
e.filters['tojson']=tojson
e.globals['raise_exception']=raise_exception
CTX={"msgs":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo","tool_calls":[{"function":{"name":"f","arguments":{"a":1,"b":"é"}}}]}],
     "d":{"b":2,"a":1,"z":[1,2.5,None,True]},"s":"  Hello World  ","n":7,"f":2.5,"l":[3,1,2],"u":"héllo wörld","e":[],"t":None}
T=[
 # whitespace control
 "a\n{% if true %}\nyes\n{% endif %}\nb",
 "a\n  {% if true %}\n  yes\n  {% endif %}\nb",
 "a  {%- if true -%}  yes  {%- endif -%}  b",
 "x {{- ' y ' -}} z",
 "{% for i in l %}\n  {{ i }}\n{% endfor %}\n",
 "  {%+ if true %}k{% endif %}",
 "{# comment #}\nA{#- c -#}  B\n  {# c2 #}\nC",
 "{% if true %}a{% endif +%}\nb",
 "line1\n    {{ n }}\n  {% set x = 1 %}\nend\n",
 "{% raw %}{{ not }}{% endraw %}",
 # loops
 "{% for m in msgs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
 "{% for x in l if x > 1 %}{{ x }}/{{ loop.length }} {% else %}none{% endfor %}",
 "{% for x in e %}{{ x }}{% else %}empty{% endfor %}",
 "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
 "{% for k in d %}{{ k }}{% endfor %}",
 "{% for c in 'héy' %}[{{ c }}]{% endfor %}",
 "{% for x in l %}{{ loop.cycle('a','b') }}{% if loop.previtem is defined %}p{{ loop.previtem }}{% endif %}{% if loop.nextitem is defined %}n{{ loop.nextitem }}{% endif %} {% endfor %}",
 "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
 "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}",
 "{% for i in range(3) %}{% if i == 1 %}{% set x = 5 %}{% endif %}[{{ x }}]{% endfor %}{{ x }}",
 "{% for (a, b) in [(1,2),(3,4)] %}{{ a + b }}{% endfor %}",
 # set / namespace
 "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
 "{% set ns = namespace(c=0, s='') %}{% for i in l %}{% set ns.c = ns.c + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}",
 "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
 "{% set blk %}inner {{ n }}{% endset %}[{{ blk }}]",
 "{% set x = 3 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}",
 # macros
 "{% macro f(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ f(1) }} {{ f(1, 3) }} {{ f(b=5, a=4) }}",
 "{% macro g(x) %}{{ x }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ g(1, 2, 3) }}{{ g(1, y=2) }}",
 "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(5) }}",
 "{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}body{{ n }}{% endcall %}",
 "{% macro fmt(t) %}{{ t.function.name }}({{ t.function.arguments | tojson }}){% endmacro %}{{ fmt(msgs[1].tool_calls[0]) }}",
 # expressions
 "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }} {{ 7 / 2 }} {{ 4 / 2 }}",
 "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 100.0 * 3 }} {{ -0.0 }} {{ 3.14159 }} {{ 1/3 }} {{ 2.5 * 2 }}",
 "{{ 'a' ~ 1 ~ none ~ true ~ [1] }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }}",
 "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}",
 "{{ 'ell' in 'hello' }} {{ 2 in l }} {{ 'a' in d }} {{ 'q' not in d }} {{ not true }} {{ true and 'x' }} {{ 0 or 'y' }} {{ none or [] }}",
 "{{ 'yes' if n > 3 else 'no' }} [{{ 'x' if false }}] {{ 1 if t is none else 2 }}",
 "{{ [1, 'a', none, true, 1.5, {'k': 'v'}, (1,), (1, 2)] }} {{ {'a': [1]} }} {{ \"it's\" }} {{ ['it\\'s', 'q\"'] }} {{ ['a\\nb'] }}",
 "{{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[::-1] }} {{ l[:2] }} {{ l[::2] }} {{ u[1:4] }} {{ u[::-1] }} {{ u[-3:] }} {{ l[5:] }} {{ l[-10:1] }}",
 "{{ d.a }} {{ d['b'] }} {{ d.missing }} [{{ d.missing is defined }}] {{ msgs[0].role }} {{ msgs[5] is defined }} {{ d.z[1] }} {{ l.0 }}",
 "{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('q', 9) }} {{ d.get('q') }}",
 "{{ -n }} {{ +n }} {{ -f }} {{ n - -1 }}",
 "{{ true }} {{ True }} {{ none }} {{ None }} {{ t }} {{ nothing }}|",
 # filters
 "{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}|{{ s | length }}|{{ u | length }}",
 "{{ d | tojson }} {{ d | tojson(indent=2) }} {{ u | tojson }} {{ msgs | tojson }} {{ 'a\"\\\\\\n\\t\\u0001' | tojson }} {{ [] | tojson(indent=2) }} {{ {} | tojson }} {{ 1.0 | tojson }} {{ d | tojson(sort_keys=true) }}",
 "{{ msgs[1] | tojson(indent=4) }}",
 "{{ l | join(', ') }} {{ l | join }} {{ msgs | map(attribute='role') | join('/') }} {{ l | map('string') | list }}",
 "{{ l | sort }} {{ l | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ msgs | sort(attribute='role') | map(attribute='content') | list }}",
 "{{ d | dictsort }} {{ [1, 2, 1, 3] | unique | list }} {{ l | reverse | list }} {{ 'abc' | reverse }} {{ l | first }} {{ l | last }} {{ e | first }}|",
 "{{ msgs | selectattr('role', 'equalto', 'user') | list | length }} {{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | first }} {{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ msgs | selectattr('tool_calls') | list | length }} {{ msgs | selectattr('tool_calls', 'defined') | list | length }}",
 "{{ nothing | default('dflt') }} {{ '' | default('x') }} {{ '' | default('x', true) }} {{ 0 | d('z', boolean=true) }} {{ n | default(3) }}",
 "{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ '3' | int + 1 }} {{ 'x' | int }} {{ '2.7' | int }} {{ 3.9 | int }} {{ '1.5' | float }} {{ 2 | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(method='ceil') }}",
 "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}",
 "{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }} {{ 'one two  three' | wordcount }} {{ d | items | list }} {{ n | string }} {{ [1, 2] | string }} {{ l | sum }} {{ l | min }} {{ l | max }} {{ 'ab' | list }}",
 "{{ l | count }} {{ d | length }} {{ nothing | length }} {{ nothing | list }} {{ nothing | join }}|{{ [[1,2],[3]] | map('length') | list }} {{ range(5) | batch(2) | list }}",
 # tests
 "{{ n is number }} {{ f is float }} {{ n is integer }} {{ true is boolean }} {{ true is number }} {{ s is string }} {{ d is mapping }} {{ l is sequence }} {{ s is iterable }} {{ n is iterable }} {{ nothing is undefined }} {{ t is none }} {{ raise_exception is callable }}",
 "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ n is eq 7 }} {{ n is ne 7 }} {{ n is gt 3 }} {{ n is lt(3) }} {{ t is sameas none }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 2 is in l }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ d is not mapping }}",
 "{{ msgs[0].content is string and msgs[0].content is not none }} {{ msgs[1].tool_calls is iterable }}",
 # string methods
 "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nA\\n'.lstrip('\\n') }}|{{ 'abc'.rstrip('cb') }}",
 "{{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ ''.split() }} {{ ''.split(',') }}",
 "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('lo', 'x')) }} {{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'a-b'.replace('-', '') }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'hello'.capitalize() }} {{ 'hello'.rfind('l') }}",
 "{{ '{} and {}'.format(1, 'b') }} {{ '{0}{0}'.format('x') }} {{ '{name}!'.format(name='n') }} {{ ', '.join(['a', 'b']) }} {{ 'a\\nb\\n'.splitlines() }} {{ '123'.isdigit() }} {{ 'ab1'.isalpha() }}",
 "{{ u.upper() }} {{ 'ÉCOLE'.lower() }} {{ u | title }}",
 # undefined / errors
 "{{ nothing }}|{{ nothing is defined }}|{% if nothing %}y{% else %}n{% endif %}|{% for x in nothing %}{{ x }}{% endfor %}|{{ nothing ~ 'x' }}",
 "{{ nothing.attr }}",
 "{{ d.missing.deeper }}",
 "{{ msgs[0].content.foo() }}",
 "{{ 'a' + 1 }}",
 "{{ 1 + none }}",
 "{{ 1 // 0 }}",
 "{{ raise_exception('custom failure ' ~ n) }}",
 "{% for x in t %}{% endfor %}",
 "{{ [1].append(2) }}",
 "{{ d | keys }}",
 "{{ range(100001) | length }}",
 "{{ l < 'a' }}",
 "{% set x = [1, 2, 3] %}{{ x | tojson }}{% set y = {'k': x, 'n': none, 'b': false} %}{{ y | tojson }}",
 "{{ strftime_now('%Y') | length }}",
 "{% if t is none %}none{% elif t %}t{% else %}f{% endif %}{% if n == 7 %}A{% elif n == 8 %}B{% endif %}",
]
out=[]
for src in T:
    try:
        r=e.from_string(src).render(**CTX); out.append({"src":src,"out":r})
    except Exception as x:
        out.append({"src":src,"err":str(x)})
json.dump({"ctx":CTX,"cases":out},open('tests/unit/template_cases.json','w'),ensure_ascii=False,indent=1)
print(len(out))
