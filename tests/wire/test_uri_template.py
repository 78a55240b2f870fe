"""RFC 6570 expansion, linear-time matching, traversal rejection and routing of MCP resource templates."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trio_mcp._uri_template import (
    MAX_TEMPLATE_LENGTH,
    MAX_URI_LENGTH,
    MAX_VARIABLES,
    MatchedVariables,
    TemplateRouter,
    UriTemplate,
)

# ---------------------------------------------------------------------------------------------------------
# Expansion: the examples of RFC 6570 sections 1.2 and 3.2 (levels 1-3 and the level-4 modifiers).
# ---------------------------------------------------------------------------------------------------------

RFC_VALUES: dict[str, Any] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

RFC_EXAMPLES = [
    # 1.2 level 1
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    # 1.2 level 2
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
    # 1.2 level 3
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    # 3.2.2 simple string expansion
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # 3.2.3 reserved expansion
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    # 3.2.4 fragment expansion
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    # 3.2.5 label expansion with dot-prefix
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    # 3.2.6 path segment expansion
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # 3.2.7 path-style parameter expansion
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # 3.2.8 form-style query expansion
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # 3.2.9 form-style query continuation
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_rfc6570_expansion_examples(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(RFC_VALUES) == expected


def test_expand_mcp_shapes_and_types() -> None:
    assert UriTemplate("file:///{path}").expand({"path": "a b"}) == "file:///a%20b"
    assert UriTemplate("users://{id}/profile").expand({"id": 42}) == "users://42/profile"
    assert UriTemplate("search://q{?query,limit}").expand({"query": "mcp", "limit": 10}) == (
        "search://q?query=mcp&limit=10"
    )
    assert (
        UriTemplate("repo://{owner}/{repo}/blob{/path*}").expand(
            {"owner": "o", "repo": "r", "path": ("src", "main.py")}
        )
        == "repo://o/r/blob/src/main.py"
    )
    assert UriTemplate("x://{v}").expand({"v": "é/€"}) == "x://%C3%A9%2F%E2%82%AC"
    assert UriTemplate("x://{+v}").expand({"v": "%41%zz"}) == "x://%41%25zz"
    assert UriTemplate("x://é/{v}").expand({"v": "1"}) == "x://%C3%A9/1"


@pytest.mark.parametrize("value", [True, 1.5, object(), [1, None], {"k": [1]}])
def test_expand_rejects_unsupported_types(value: object) -> None:
    with pytest.raises(TypeError):
        UriTemplate("{v}").expand({"v": value})


def test_expand_rejects_prefix_on_composite_values() -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{v:2}").expand({"v": ["ab", "cd"]})
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{v:2}").expand({"v": {"a": "b"}})


def test_variables_in_order_without_duplicates() -> None:
    t = UriTemplate("repo://{owner}/{repo}/blob{/path*}{?ref,owner}")
    assert t.variables == ("owner", "repo", "path", "ref")
    assert UriTemplate("static://x").variables == ()
    assert UriTemplate("{a.b,c%20d:3}").variables == ("a.b", "c%20d")


def test_template_is_frozen_and_compares_by_text() -> None:
    t = UriTemplate("a{b}")
    assert t == UriTemplate("a{b}") and hash(t) == hash(UriTemplate("a{b}"))
    assert t != UriTemplate("a{c}")
    assert str(t) == "a{b}"
    with pytest.raises(AttributeError):
        t.template = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------------
# Malformed templates: ValueError naming the position.
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "position"),
    [
        ("abc{def", 3),
        ("abc}def", 3),
        ("a{b{c}", 3),
        ("x{}", 1),
        ("{=a}", 1),
        ("{,a}", 1),
        ("{!a}", 1),
        ("{@a}", 1),
        ("{|a}", 1),
        ("{a,}", 3),
        ("{a-b}", 2),
        ("{.a..b}", 4),
        ("{.a.}", 3),
        ("{a:0}", 3),
        ("{a:10000}", 3),
        ("{a:x}", 3),
        ("{a:}", 3),
        ("{a%2}", 2),
        ("{a*b}", 2),
        ("a b{c}", 1),
        ("a<{c}", 1),
        ("a\n", 1),
        ("50%", 2),
        ("50%zz", 2),
    ],
)
def test_malformed_templates_raise_with_position(template: str, position: int) -> None:
    with pytest.raises(ValueError, match=rf"at position {position}\b"):
        UriTemplate(template)


def test_template_limits() -> None:
    UriTemplate("a" * MAX_TEMPLATE_LENGTH)
    with pytest.raises(ValueError, match="longer than"):
        UriTemplate("a" * (MAX_TEMPLATE_LENGTH + 1))
    UriTemplate("{" + ",".join(f"v{i}" for i in range(MAX_VARIABLES)) + "}")
    with pytest.raises(ValueError, match="variables"):
        UriTemplate("{" + ",".join(f"v{i}" for i in range(MAX_VARIABLES + 1)) + "}")


def test_non_string_template_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        UriTemplate(b"x")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# Matching.
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("file:///{path}", "file:///readme.md", {"path": "readme.md"}),
        ("file:///{path}", "file:///docs/readme.md", None),  # plain {var} never crosses "/"
        ("file:///{+path}", "file:///docs/readme.md", {"path": "docs/readme.md"}),
        ("users://{id}/profile", "users://42/profile", {"id": "42"}),
        ("users://{id}/profile", "users:///profile", None),  # {var} needs at least one character
        ("users://{id}/profile", "users://42/profile/x", None),
        ("users://{id}/profile", "users://4/2/profile", None),
        ("users://{id}/profile", "other://42/profile", None),
        (
            "repo://{owner}/{repo}/blob{/path*}",
            "repo://o/r/blob/a/b/c",
            {"owner": "o", "repo": "r", "path": ["a", "b", "c"]},
        ),
        ("repo://{owner}/{repo}/blob{/path*}", "repo://o/r/blob", {"owner": "o", "repo": "r"}),
        ("repo://{owner}/{repo}/blob{/path*}", "repo://o/r/blob/", {"owner": "o", "repo": "r", "path": [""]}),
        ("{/a,b,c}", "/1/2/3", {"a": "1", "b": "2", "c": "3"}),
        ("{/a,b,c}", "/1/2", {"a": "1", "b": "2"}),
        ("{/a,b}", "/1/2/3", None),  # surplus "/" items never join into a single variable
        ("{/a*,b}", "/1/2/3", {"a": ["1", "2"], "b": "3"}),
        ("{/a,b*}", "/1/2/3", {"a": "1", "b": ["2", "3"]}),
        ("{/a}{/b}", "/1/2", {"a": "1", "b": "2"}),
        ("{x,y}", "1024,768", {"x": "1024", "y": "768"}),
        ("{x}", "a,b", {"x": "a,b"}),  # surplus items re-joined into the last variable
        ("{list*}", "red,green,blue", {"list": ["red", "green", "blue"]}),
        ("{+x,y}/here", "/foo/bar,1024/here", {"x": "/foo/bar", "y": "1024"}),
        ("X{#x,y}", "X#a/b,c", {"x": "a/b", "y": "c"}),
        ("X{#x}", "X", {}),
        ("X{#x}", "X#", {"x": ""}),
        ("name{.ext}", "name.tar.gz", {"ext": "tar.gz"}),
        ("{name}{.ext}", "archive.tar.gz", {"name": "archive", "ext": "tar.gz"}),
        ("{a}.{b}", "x.y.z", {"a": "x", "b": "y.z"}),  # shortest first capture
        ("www{.dom*}", "www.example.com", {"dom": ["example", "com"]}),
        ("{;x,y}", ";y=768;x=1024", {"x": "1024", "y": "768"}),
        ("{;x,empty}", ";x=1;empty", {"x": "1", "empty": ""}),
        ("{;list*}", ";list=red;list=green", {"list": ["red", "green"]}),
        ("{/x}/{y}", "/b", {"y": "b"}),
        ("{/x}/{y}", "//b", {"x": "", "y": "b"}),
        ("{/x}/{y}", "/a/b", {"x": "a", "y": "b"}),
        ("{x}{y}", "ab", None),  # adjacent expressions without a leading character: second comes up empty
        ("{x:3}", "abc", {"x": "abc"}),
        ("{x:3}", "abcd", None),
        ("{x:2}", "%C3%A9%C3%A9", {"x": "éé"}),  # the prefix counts characters, not octets
        ("{x}/{x}", "a/a", {"x": "a"}),
        ("{x}/{x}", "a/b", None),
        # The ambiguity rules of the module docstring, one by one.
        ("{name}.txt", "a.txt.txt", {"name": "a.txt"}),  # the final literal is anchored at the end
        ("x{/path*}/raw", "x/a/raw/b/raw", {"path": ["a", "raw", "b"]}),
        ("repo://{+path}/blob/{ref}", "repo://a/blob/b/blob/main", {"path": "a/blob/b", "ref": "main"}),
        ("x{/dirs*}/{name}", "x/a/b/c", {"dirs": ["a", "b"], "name": "c"}),  # slashes counted from the end
        ("x{/dirs*};{v}/{name}.md", "x/a/b;1/c.md", {"dirs": ["a", "b"], "v": "1", "name": "c"}),
        ("{/a,b}/x{?q}", "/1/2/x?q=3", {"a": "1", "b": "2", "q": "3"}),  # segments counted from the left
        ("{/a,b}/", "/1/2/", {"a": "1", "b": "2"}),
        ("{/a,b}/", "///", {"a": "", "b": ""}),
        ("{.a,b}{/c}{.d}", ".x.y/z.w", {"a": "x", "b": "y", "c": "z", "d": "w"}),  # own separator never stops
        ("{+a}/x/{b}{?q}", "p/x/q/x/r?q=1", None),  # no backtracking: the shortest "a" leaves "q/x/r"
        ("static://x", "static://x", {}),
        ("static://x", "static://xy", None),
        ("x://%C3%A9/{v}", "x://%C3%A9/1", {"v": "1"}),
        ("x://é/{v}", "x://%C3%A9/1", {"v": "1"}),  # literals match in their expanded form
    ],
)
def test_match(template: str, uri: str, expected: MatchedVariables | None) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("search://q", {}),
        ("search://q?query=mcp", {"query": "mcp"}),
        ("search://q?limit=5", {"limit": "5"}),
        ("search://q?query=mcp&limit=5", {"query": "mcp", "limit": "5"}),
        ("search://q?limit=5&query=mcp", {"query": "mcp", "limit": "5"}),
        ("search://q?query=&limit=5", {"query": "", "limit": "5"}),
        ("search://q?query", {"query": ""}),
        ("search://q?query=a&&limit=5&", {"query": "a", "limit": "5"}),  # empty pairs are skipped
        ("search://q?", {}),
        ("search://q?query=a%3Db%26c", {"query": "a=b&c"}),
        ("search://q?query=a?b", {"query": "a?b"}),  # raw "?" is legal inside a query
        ("search://q?other=1", None),  # unknown parameter: not this template
        ("search://q?query=a&query=b", None),  # repeated non-exploded parameter
        ("search://q?query=a#frag", None),
        ("search://qq", None),
    ],
)
def test_query_parameters_any_order_absent_is_absent(uri: str, expected: MatchedVariables | None) -> None:
    assert UriTemplate("search://q{?query,limit}").match(uri) == expected


def test_query_continuation_and_explode() -> None:
    t = UriTemplate("api://items{?kind}{&tag*,page}")
    assert t.match("api://items?page=2&tag=a&kind=k&tag=b") == {"kind": "k", "tag": ["a", "b"], "page": "2"}
    assert t.match("api://items&page=2") == {"page": "2"}
    assert t.match("api://items") == {}
    assert UriTemplate("?fixed=yes{&x}").match("?fixed=yes&x=1024") == {"x": "1024"}
    assert UriTemplate("a{?x}{#f}").match("a?x=1#frag") == {"x": "1", "f": "frag"}
    assert UriTemplate("a{/p*}{?x}").match("a/b/c?x=1") == {"p": ["b", "c"], "x": "1"}
    assert UriTemplate("a{/p*}{?x}").match("a/b/c") == {"p": ["b", "c"]}
    assert UriTemplate("a{/p*}{?x}/z").match("a/b/z") == {"p": ["b"]}


def test_percent_decoding() -> None:
    t = UriTemplate("users://{id}/profile")
    assert t.match("users://j%C3%B6rg%20m/profile") == {"id": "jörg m"}
    assert t.match("users://%e2%82%ac/profile") == {"id": "€"}  # lower-case hex is fine
    assert t.match("users://jörg/profile") == {"id": "jörg"}  # raw non-ASCII is taken as is
    assert t.match("users://a%2/profile") is None  # malformed escape
    assert t.match("users://a%zz/profile") is None
    assert t.match("users://%FF/profile") is None  # not UTF-8
    assert UriTemplate("{/p*}").match("/a%20b/c%2Cd") == {"p": ["a b", "c,d"]}


def test_uri_length_limit() -> None:
    t = UriTemplate("x://{+rest}")
    assert t.match("x://" + "a" * (MAX_URI_LENGTH - 4)) is not None
    assert t.match("x://" + "a" * (MAX_URI_LENGTH - 3)) is None


# ---------------------------------------------------------------------------------------------------------
# Traversal and injection rejection.
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("file:///{+path}", "file:///../etc/passwd"),
        ("file:///{+path}", "file:///a/../../etc/passwd"),
        ("file:///{+path}", "file:///a/.."),
        ("file:///{+path}", "file:///a/%2E%2E/b"),
        ("file:///{+path}", "file:///a%2F..%2Fb"),
        ("file:///{+path}", "file:///a/..%5Cb"),  # backslash separators count too
        ("file:///{+path}", "file:///a%00b"),
        ("file:///{path}", "file:///.."),
        ("file:///{path}", "file:///%2E%2E"),
        ("file:///{path}", "file:///a%2Fb"),  # decoded "/" in a non-reserved variable
        ("file:///{path}", "file:///..%5C..%5Cwin.ini"),
        ("file:///{path}", "file:///a%00"),
        ("repo://x{/path*}", "repo://x/a/../b"),
        ("repo://x{/path*}", "repo://x/a/%2E%2E/b"),
        ("repo://x{/path*}", "repo://x/a%2Fb"),
        ("search://q{?path}", "search://q?path=..%2Fetc"),
        ("search://q{?path}", "search://q?path=.."),
        ("search://q{?path}", "search://q?path=a/b"),
        ("x{#frag}", "x#../a"),
        ("x{;p}", "x;p=%2E%2E"),
    ],
)
def test_traversal_rejected_by_default(template: str, uri: str) -> None:
    t = UriTemplate(template)
    assert t.match(uri) is None
    assert t.match(uri, reject_traversal=False) is not None


def test_traversal_lookalikes_are_fine() -> None:
    t = UriTemplate("file:///{+path}")
    assert t.match("file:///a/..b/c../.../.hidden") == {"path": "a/..b/c../.../.hidden"}
    assert UriTemplate("file:///{name}").match("file:///...") == {"name": "..."}
    assert UriTemplate("file:///{name}").match("file:///a..b") == {"name": "a..b"}


def test_traversal_opt_out_returns_decoded_values() -> None:
    assert UriTemplate("file:///{path}").match("file:///a%2Fb", reject_traversal=False) == {"path": "a/b"}
    assert UriTemplate("x{/p*}").match("x/a/../b", reject_traversal=False) == {"p": ["a", "..", "b"]}


# ---------------------------------------------------------------------------------------------------------
# Linear time: the ReDoS shape of CVE in the TypeScript SDK, and friends.
# ---------------------------------------------------------------------------------------------------------


def _best_time(fn: Callable[[], object], runs: int = 10) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("{/id*}", "a," * 10_000 + "!"),
        ("{/id*}", "/" + "a," * 10_000 + "!"),
        ("{/id*}", "/" + "a/" * 10_000 + "!/"),
        ("x://{id*}", "x://" + "a," * 10_000 + "!/"),
        ("x://{id}", "x://" + "a," * 10_000 + "/"),
        ("x://{a},{b},{c}/end", "x://" + "a," * 10_000 + "!"),
        ("x://{a}/{b}/{c}/end", "x://" + "a/" * 10_000 + "!"),
        ("x://{+a}/x/{+b}/x/{+c}/y", "x://" + "a/x/" * 10_000 + "!"),
        ("x://{a}{?q,r}", "x://a?" + "q=1&" * 10_000 + "#"),
        ("x://{a}{.b}{.c}{/d*}", "x://" + "a." * 10_000 + "!"),
        ("{/id*}", "/" + "a/" * 10_000 + "a"),  # a successful match with 10 001 items
        ("x{/dirs*}/{name}", "x" + "/a" * 30_000),
        ("x://{+a}", "x://" + "a" * (MAX_URI_LENGTH - 4)),
    ],
)
def test_adversarial_uris_are_decided_fast(template: str, uri: str) -> None:
    t = UriTemplate(template)
    t.match(uri)  # warm-up
    assert _best_time(lambda: t.match(uri)) < 0.010


def test_matching_scales_linearly() -> None:
    t = UriTemplate("x://{a}/{b}{/c*}{?d,e}")
    small = "x://a/b" + "/c%20" * 375 + "?d=" + "x," * 375 + "&e=" + "%41" * 375
    large = "x://a/b" + "/c%20" * 6_000 + "?d=" + "x," * 6_000 + "&e=" + "%41" * 6_000
    assert t.match(small) is not None and t.match(large) is not None
    # 16x the input costs 16x the time if linear and 256x if quadratic: 64x, between the two, leaves room for a
    # loaded machine's noise either way.
    assert _best_time(lambda: t.match(large)) < 64 * max(_best_time(lambda: t.match(small)), 1e-4)


# ---------------------------------------------------------------------------------------------------------
# Round trips (hypothesis).
# ---------------------------------------------------------------------------------------------------------

# Values for non-reserved operators: unreserved characters plus characters that are always percent-encoded.
_U_ALPHABET = "abcXYZ019_~ é€/:@!,&=?#%;+*()$'[]"
# Values for "+" and "#" pass reserved characters through, so they only get the unambiguous ones.
_R_ALPHABET = "abcXYZ019_~ é€"
# Literals use characters that never appear raw in a generated value.
_LITERAL_ALPHABET = "-:/"
_UNNAMED_MERGING = {"/", "."}
_SEPARATORS = {"": ",", "+": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&", "#": ","}


@st.composite
def _template_and_values(draw: st.DrawFn) -> tuple[UriTemplate, dict[str, Any], MatchedVariables]:
    """A template of the supported shapes, values for it, and what matching must give back."""
    n_parts = draw(st.integers(1, 5))
    text: list[str] = []
    values: dict[str, Any] = {}
    expected: MatchedVariables = {}
    counter = 0
    previous: str | None = None  # the operator of the directly preceding expression, or None
    group_has_explode = False
    run_ops: list[str] = []  # operators of the merged run the previous expression belongs to
    before_ops: list[str] = []  # operators since the last literal, before that run
    # After "{/p*}" and a literal with "/", only a tail with a fixed number of "/" is supported.
    exploded_path_before = False
    countable_tail_only = False

    after_query = False  # no path (no "/" in literals) after a query or fragment

    def literal() -> str:
        nonlocal countable_tail_only, exploded_path_before
        alphabet = _LITERAL_ALPHABET.replace("/", "") if after_query else _LITERAL_ALPHABET
        text = draw(st.text(alphabet, min_size=1, max_size=3))
        countable_tail_only = countable_tail_only or (exploded_path_before and "/" in text)
        exploded_path_before = False
        return text

    if draw(st.booleans()):
        text.append(literal())
    for _ in range(n_parts):
        ops = ["", ".", ";"] if countable_tail_only else ["", "+", ".", "/", ";", "?", "&", "#"]
        op = draw(st.sampled_from(ops))
        prefixless = op in ("", "+")
        # Ambiguities no matcher can resolve: adjacent expressions where the second has no leading
        # character, repeated "?" or "#" operators, and an operator whose leading character is the
        # separator of an earlier, not directly preceding one (which may be absent: "{.a}{;b}{.c}",
        # "{?a}{;b}{&c}").  Separate those with a literal.
        merges = previous is not None and op != "" and _SEPARATORS[previous] == op
        earlier = before_ops if merges else before_ops + run_ops
        needs_literal = previous is not None and (
            prefixless or (op in "?#" and op in before_ops + run_ops) or any(_SEPARATORS[o] == op for o in earlier)
        )
        if needs_literal or (previous is not None and draw(st.booleans())):
            text.append(literal())
            previous = None
            merges = False
            before_ops, run_ops = [], []
            if countable_tail_only and op not in ("", ".", ";"):
                op = draw(st.sampled_from(["", ".", ";"]))
                prefixless = op == ""
        if merges:
            run_ops.append(op)
        else:
            before_ops, run_ops = before_ops + run_ops, [op]
        if not (previous == op and op in _UNNAMED_MERGING):
            group_has_explode = False
        named = op in (";", "?", "&")
        alphabet = _R_ALPHABET if op in ("+", "#") else _U_ALPHABET
        min_size = 1 if prefixless else 0
        specs: list[str] = []
        n_vars = draw(st.integers(1, 3))
        for index in range(n_vars):
            name = f"v{counter}"
            counter += 1
            # Unnamed operators assign by position, so one exploded variable per group, at its end.
            last = index == n_vars - 1
            explode = draw(st.booleans()) and (named or (last and not group_has_explode))
            prefix = None if explode or not draw(st.booleans()) else draw(st.integers(1, 4))
            specs.append(name + ("*" if explode else f":{prefix}" if prefix else ""))
            if named and draw(st.booleans()):
                continue  # named parameters may be absent
            if explode:
                group_has_explode = group_has_explode or not named
                items = draw(st.lists(st.text(alphabet, min_size=min_size, max_size=4), min_size=1, max_size=3))
                values[name] = items
                expected[name] = list(items)
            else:
                value = draw(st.text(alphabet, min_size=min_size, max_size=6))
                values[name] = value
                expected[name] = value[:prefix] if prefix else value
        text.append("{" + op + ",".join(specs) + "}")
        after_query = after_query or op in ("?", "&", "#")
        exploded_path_before = exploded_path_before or (op == "/" and any(spec.endswith("*") for spec in specs))
        previous = op
    if draw(st.booleans()):
        text.append(literal())
    return UriTemplate("".join(text)), values, expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_template_and_values())
def test_round_trip_match_of_expand(case: tuple[UriTemplate, dict[str, Any], MatchedVariables]) -> None:
    template, values, expected = case
    uri = template.expand(values)
    assert template.match(uri, reject_traversal=False) == expected, (template.template, uri)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_template_and_values())
def test_round_trip_expand_of_match(case: tuple[UriTemplate, dict[str, Any], MatchedVariables]) -> None:
    template, values, _ = case
    uri = template.expand(values)
    matched = template.match(uri, reject_traversal=False)
    assert matched is not None, (template.template, uri)
    assert template.expand(matched) == uri


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.sampled_from(["x://{a}/{+b}{?c,d}", "{/p*}{.e}", "{x,y*}", "f{#g}{;h}"]))
def test_match_never_raises(uri: str, template: str) -> None:
    result = UriTemplate(template).match(uri)
    assert result is None or isinstance(result, dict)


# ---------------------------------------------------------------------------------------------------------
# Router.
# ---------------------------------------------------------------------------------------------------------


def test_router_first_match_wins_in_registration_order() -> None:
    router: TemplateRouter[str] = TemplateRouter()
    router.add("readme", "file:///README.md")
    router.add("file", "file:///{name}")
    router.add("tree", UriTemplate("file:///{+path}"))
    router.add("search", "search://q{?query}")
    router.add("search-any", "search://q{?query,page}")
    assert len(router) == 5
    assert [key for key, _ in router] == ["readme", "file", "tree", "search", "search-any"]
    assert router.match("file:///README.md") == ("readme", {})
    assert router.match("file:///notes.txt") == ("file", {"name": "notes.txt"})
    assert router.match("file:///docs/notes.txt") == ("tree", {"path": "docs/notes.txt"})
    assert router.match("search://q?query=x") == ("search", {"query": "x"})
    assert router.match("search://q?page=2") == ("search-any", {"page": "2"})
    assert router.match("nope://x") is None
    assert router.match("file:///../x") is None
    assert router.match("file:///../x", reject_traversal=False) == ("tree", {"path": "../x"})
    assert router.match("file:///" + "a" * MAX_URI_LENGTH) is None


def test_router_rejects_bad_templates_at_registration() -> None:
    router: TemplateRouter[int] = TemplateRouter()
    with pytest.raises(ValueError, match="position"):
        router.add(1, "file:///{path")
    assert len(router) == 0


def test_router_with_many_templates_stays_fast() -> None:
    router: TemplateRouter[int] = TemplateRouter()
    for i in range(200):
        router.add(i, f"res{i}://{{a}}/{{+b}}{{?c,d}}")
    uri = "res199://x/" + "y/" * 20_000 + "?c=1"
    assert router.match(uri) == (199, {"a": "x", "b": "y/" * 20_000, "c": "1"})
    assert _best_time(lambda: router.match(uri)) < 0.010
    assert _best_time(lambda: router.match("zzz://" + "a," * 10_000)) < 0.010
