/*
 * Minimal JSON reader (RFC 8259 subset enough for profiles): objects, arrays, strings with
 * escapes (\uXXXX folded to UTF-8, surrogate pairs included), numbers, true/false/null.
 * Kept dependency-free so the simulator builds with a bare `cc` inside any sandbox image.
 */
#include "sim_json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    int depth;
} sj_parser;

static void fail(sj_parser *p, const char *what)
{
    if (p->err && p->err[0] == '\0')
        snprintf(p->err, p->errlen, "%s at offset %zu", what, p->pos);
}

static void skip_ws(sj_parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
        p->pos++;
}

static sj_node *new_node(sj_type type, size_t start)
{
    sj_node *n = calloc(1, sizeof(*n));
    if (n) {
        n->type = type;
        n->src_start = start;
    }
    return n;
}

static int push(sj_node *n, sj_node *item, char *key)
{
    sj_node **items = realloc(n->items, (n->n + 1) * sizeof(*items));
    if (!items)
        return -1;
    n->items = items;
    if (n->type == SJ_OBJ) {
        char **keys = realloc(n->keys, (n->n + 1) * sizeof(*keys));
        if (!keys)
            return -1;
        n->keys = keys;
        n->keys[n->n] = key;
    }
    n->items[n->n++] = item;
    return 0;
}

static void put_utf8(char *out, size_t *len, unsigned long cp)
{
    if (cp < 0x80) {
        out[(*len)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*len)++] = (char)(0xC0 | (cp >> 6));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*len)++] = (char)(0xE0 | (cp >> 12));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*len)++] = (char)(0xF0 | (cp >> 18));
        out[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(const char *s, unsigned long *out)
{
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return -1;
        v = v * 16 + (unsigned long)(isdigit((unsigned char)s[i]) ? s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10));
    }
    *out = v;
    return 0;
}

static char *parse_string_raw(sj_parser *p)
{
    /* p->s[p->pos] == '"'; the decoded text is never longer than the source. */
    size_t start = ++p->pos, end = start;
    while (p->s[end] && p->s[end] != '"') {
        if (p->s[end] == '\\' && p->s[end + 1])
            end++;
        end++;
    }
    if (!p->s[end]) {
        fail(p, "unterminated string");
        return NULL;
    }
    char *out = malloc(end - start + 1);
    size_t len = 0;
    if (!out)
        return NULL;
    while (p->pos < end) {
        char c = p->s[p->pos++];
        if ((unsigned char)c < 0x20) {
            fail(p, "control character in string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            out[len++] = c;
            continue;
        }
        c = p->s[p->pos++];
        switch (c) {
        case '"': out[len++] = '"'; break;
        case '\\': out[len++] = '\\'; break;
        case '/': out[len++] = '/'; break;
        case 'b': out[len++] = '\b'; break;
        case 'f': out[len++] = '\f'; break;
        case 'n': out[len++] = '\n'; break;
        case 'r': out[len++] = '\r'; break;
        case 't': out[len++] = '\t'; break;
        case 'u': {
            unsigned long cp, lo;
            if (p->pos + 4 > end || hex4(p->s + p->pos, &cp)) {
                fail(p, "bad \\u escape");
                free(out);
                return NULL;
            }
            p->pos += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && p->pos + 6 <= end && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u' && !hex4(p->s + p->pos + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->pos += 6;
            }
            put_utf8(out, &len, cp);
            break;
        }
        default:
            fail(p, "bad escape");
            free(out);
            return NULL;
        }
    }
    p->pos = end + 1;
    out[len] = '\0';
    return out;
}

static sj_node *parse_value(sj_parser *p);

static sj_node *parse_container(sj_parser *p, int is_obj)
{
    sj_node *n = new_node(is_obj ? SJ_OBJ : SJ_ARR, p->pos);
    char close = is_obj ? '}' : ']';
    if (!n)
        return NULL;
    p->pos++;
    skip_ws(p);
    if (p->s[p->pos] == close) {
        p->pos++;
        n->src_end = p->pos;
        return n;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (is_obj) {
            if (p->s[p->pos] != '"') {
                fail(p, "expected object key");
                goto bad;
            }
            key = parse_string_raw(p);
            if (!key)
                goto bad;
            skip_ws(p);
            if (p->s[p->pos] != ':') {
                free(key);
                fail(p, "expected ':'");
                goto bad;
            }
            p->pos++;
        }
        sj_node *item = parse_value(p);
        if (!item || push(n, item, key)) {
            free(key);
            sj_free(item);
            goto bad;
        }
        skip_ws(p);
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == close) {
            p->pos++;
            n->src_end = p->pos;
            return n;
        }
        fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        goto bad;
    }
bad:
    sj_free(n);
    return NULL;
}

static sj_node *parse_number(sj_parser *p)
{
    const char *start = p->s + p->pos;
    char *end;
    sj_node *n = new_node(SJ_NUM, p->pos);
    if (!n)
        return NULL;
    n->num = strtod(start, &end);
    if (end == start) {
        fail(p, "bad number");
        free(n);
        return NULL;
    }
    /* Keep 64-bit integers exact (memory sizes in bytes, page addresses). */
    if (isdigit((unsigned char)*start) && !memchr(start, '.', (size_t)(end - start)) &&
        !memchr(start, 'e', (size_t)(end - start)) && !memchr(start, 'E', (size_t)(end - start))) {
        n->unum = strtoull(start, NULL, 10);
        n->is_uint = 1;
    }
    p->pos += (size_t)(end - start);
    n->src_end = p->pos;
    return n;
}

static sj_node *parse_value(sj_parser *p)
{
    sj_node *n;
    skip_ws(p);
    if (++p->depth > 64) {
        fail(p, "nesting too deep");
        return NULL;
    }
    char c = p->s[p->pos];
    size_t start = p->pos;
    if (c == '{' || c == '[') {
        n = parse_container(p, c == '{');
    } else if (c == '"') {
        char *s = parse_string_raw(p);
        n = s ? new_node(SJ_STR, start) : NULL;
        if (n)
            n->str = s;
        else
            free(s);
    } else if (c == '-' || isdigit((unsigned char)c)) {
        n = parse_number(p);
    } else if (!strncmp(p->s + p->pos, "true", 4) || !strncmp(p->s + p->pos, "false", 5)) {
        n = new_node(SJ_BOOL, start);
        if (n)
            n->boolean = c == 't';
        p->pos += c == 't' ? 4 : 5;
    } else if (!strncmp(p->s + p->pos, "null", 4)) {
        n = new_node(SJ_NULL, start);
        p->pos += 4;
    } else {
        fail(p, "unexpected character");
        n = NULL;
    }
    if (n)
        n->src_end = p->pos;
    p->depth--;
    return n;
}

sj_node *sj_parse(const char *text, char *err, size_t errlen)
{
    sj_parser p = {text, 0, err, errlen, 0};
    if (err && errlen)
        err[0] = '\0';
    sj_node *n = parse_value(&p);
    if (!n)
        return NULL;
    skip_ws(&p);
    if (p.s[p.pos] != '\0') {
        fail(&p, "trailing data");
        sj_free(n);
        return NULL;
    }
    return n;
}

void sj_free(sj_node *node)
{
    if (!node)
        return;
    for (size_t i = 0; i < node->n; i++) {
        sj_free(node->items[i]);
        if (node->keys)
            free(node->keys[i]);
    }
    free(node->items);
    free(node->keys);
    free(node->str);
    free(node);
}

sj_node *sj_get(const sj_node *node, const char *key)
{
    if (!node || node->type != SJ_OBJ)
        return NULL;
    for (size_t i = node->n; i-- > 0;) /* last duplicate wins, as in Python's json */
        if (!strcmp(node->keys[i], key))
            return node->items[i];
    return NULL;
}

sj_node *sj_at(const sj_node *node, size_t index)
{
    if (!node || node->type != SJ_ARR || index >= node->n)
        return NULL;
    return node->items[index];
}
