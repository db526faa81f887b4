#include "torchscript/script-parser.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/model-error.h"

#define MAX_EXPR_DEPTH 200
#define MAX_INDENT_LEVELS 100

typedef enum {
  TOK_NAME,
  TOK_INT,
  TOK_FLOAT,
  TOK_STRING,
  TOK_OP,
  TOK_NEWLINE,
  TOK_INDENT,
  TOK_DEDENT,
  TOK_END,
} TokKind;

typedef struct {
  TokKind kind;
  guint line;
  char *text;       /* NAME, OP, STRING (decoded) */
  gint64 i;
  double f;
} Token;

typedef struct {
  const char *path;
  GArray *tokens;   /* Token */
  guint pos;
  guint depth;
  GError **error;
} Parser;

/* ------------------------------------------------------------------ lexer */

static void
token_clear (gpointer data)
{
  g_free (((Token *) data)->text);
}

static gboolean
lex_error (const char *path, guint line, GError **error, const char *what)
{
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s line %u: %s", path, line, what);
  return FALSE;
}

static void
add_token (GArray *tokens, TokKind kind, guint line, char *text)
{
  Token t = { kind, line, text, 0, 0 };
  g_array_append_val (tokens, t);
}

static gboolean
lex_string (const char *p, const char *end, const char **out_end, GString *buf)
{
  char quote = *p++;
  while (p < end && *p != quote)
    {
      if (*p == '\n')
        return FALSE;
      if (*p == '\\' && p + 1 < end)
        {
          p++;
          switch (*p)
            {
            case 'n': g_string_append_c (buf, '\n'); p++; break;
            case 't': g_string_append_c (buf, '\t'); p++; break;
            case 'r': g_string_append_c (buf, '\r'); p++; break;
            case '0': g_string_append_c (buf, '\0'); p++; break;
            case 'x':
              if (end - p >= 3 && g_ascii_isxdigit (p[1]) && g_ascii_isxdigit (p[2]))
                {
                  g_string_append_c (buf, (char) (g_ascii_xdigit_value (p[1]) * 16 + g_ascii_xdigit_value (p[2])));
                  p += 3;
                }
              else
                return FALSE;
              break;
            default: g_string_append_c (buf, *p); p++; break;
            }
          continue;
        }
      g_string_append_c (buf, *p++);
    }
  if (p >= end)
    return FALSE;
  *out_end = p + 1;
  return TRUE;
}

/* The state of one lex () run. */
typedef struct {
  const char *p, *end;
  const char *path;
  guint line;
  guint nesting;          /* open brackets: newlines inside them are not statement ends */
  gboolean at_line_start;
  GArray *indents;        /* guint columns of the open blocks, 0 first */
  GArray *tokens;
} Lexer;

typedef enum {
  LINE_STARTED,           /* tokens follow on this line */
  LINE_BLANK,             /* blank or comment-only line, consumed */
  LINE_AT_END,            /* nothing but white space left */
} LineStart;

/* At the start of a logical line: the INDENT or DEDENTs its column asks
 * for, or a blank line skipped. FALSE with error on bad indentation. */
static gboolean
lex_line_start (Lexer *lx, LineStart *result, GError **error)
{
  guint col = 0;

  while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t'))
    col = *lx->p++ == '\t' ? (col / 8 + 1) * 8 : col + 1;
  if (lx->p >= lx->end)
    {
      *result = LINE_AT_END;
      return TRUE;
    }
  if (*lx->p == '\n' || *lx->p == '#' || *lx->p == '\r')
    {
      while (lx->p < lx->end && *lx->p != '\n')
        lx->p++;
      if (lx->p < lx->end)
        lx->p++;
      lx->line++;
      *result = LINE_BLANK;
      return TRUE;
    }
  lx->at_line_start = FALSE;
  *result = LINE_STARTED;
  if (col > g_array_index (lx->indents, guint, lx->indents->len - 1))
    {
      if (lx->indents->len >= MAX_INDENT_LEVELS)
        return lex_error (lx->path, lx->line, error, "indentation nested too deeply");
      g_array_append_val (lx->indents, col);
      add_token (lx->tokens, TOK_INDENT, lx->line, NULL);
      return TRUE;
    }
  while (col < g_array_index (lx->indents, guint, lx->indents->len - 1))
    {
      g_array_set_size (lx->indents, lx->indents->len - 1);
      add_token (lx->tokens, TOK_DEDENT, lx->line, NULL);
    }
  if (col != g_array_index (lx->indents, guint, lx->indents->len - 1))
    return lex_error (lx->path, lx->line, error, "inconsistent indentation");
  return TRUE;
}

/* An int or float literal; an int past G_MAXINT64 becomes a float. */
static gboolean
lex_number (Lexer *lx, GError **error)
{
  const char *s = lx->p;
  gboolean is_float = FALSE;

  while (lx->p < lx->end && (g_ascii_isalnum (*lx->p) || *lx->p == '.' ||
                             ((*lx->p == '-' || *lx->p == '+') && (lx->p[-1] == 'e' || lx->p[-1] == 'E'))))
    {
      if (*lx->p == '.' || *lx->p == 'e' || *lx->p == 'E')
        is_float = TRUE;
      lx->p++;
    }
  g_autofree char *num = g_strndup (s, (gsize) (lx->p - s));
  Token t = { is_float ? TOK_FLOAT : TOK_INT, lx->line, NULL, 0, 0 };
  char *stop = NULL;
  if (is_float)
    t.f = g_ascii_strtod (num, &stop);
  else
    {
      guint64 v = g_ascii_strtoull (num, &stop, 10);
      t.i = (gint64) v;
      if (v > G_MAXINT64)
        {
          t.kind = TOK_FLOAT;
          t.f = (double) v;
        }
    }
  if (stop == NULL || *stop != '\0')
    return lex_error (lx->path, lx->line, error, "malformed number");
  g_array_append_val (lx->tokens, t);
  return TRUE;
}

/* An operator or bracket, longest spelling first. */
static gboolean
lex_operator (Lexer *lx, GError **error)
{
  static const char *const ops[] = { "->", "**", "//", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "...",
                                     "<<", ">>" };
  char c = *lx->p;

  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    if ((gsize) (lx->end - lx->p) >= strlen (ops[k]) && strncmp (lx->p, ops[k], strlen (ops[k])) == 0)
      {
        add_token (lx->tokens, TOK_OP, lx->line, g_strdup (ops[k]));
        lx->p += strlen (ops[k]);
        return TRUE;
      }
  if (strchr ("()[]{}:,.=+-*/%<>@&|^~", c) == NULL)
    {
      g_autofree char *what = g_strdup_printf ("unexpected character 0x%02x", (guint8) c);
      return lex_error (lx->path, lx->line, error, what);
    }
  if (c == '(' || c == '[' || c == '{')
    lx->nesting++;
  else if ((c == ')' || c == ']' || c == '}') && lx->nesting > 0)
    lx->nesting--;
  add_token (lx->tokens, TOK_OP, lx->line, g_strndup (lx->p, 1));
  lx->p++;
  return TRUE;
}

/* One token, or white space, a comment or a line continuation skipped. */
static gboolean
lex_next (Lexer *lx, GError **error)
{
  char c = *lx->p;

  if (c == '\n')
    {
      if (lx->nesting == 0)
        {
          add_token (lx->tokens, TOK_NEWLINE, lx->line, NULL);
          lx->at_line_start = TRUE;
        }
      lx->line++;
      lx->p++;
      return TRUE;
    }
  if (c == ' ' || c == '\t' || c == '\r')
    {
      lx->p++;
      return TRUE;
    }
  if (c == '#')
    {
      while (lx->p < lx->end && *lx->p != '\n')
        lx->p++;
      return TRUE;
    }
  if (c == '\\' && lx->p + 1 < lx->end && lx->p[1] == '\n')
    {
      lx->p += 2;
      lx->line++;
      return TRUE;
    }
  if (g_ascii_isalpha (c) || c == '_')
    {
      const char *s = lx->p;
      while (lx->p < lx->end && (g_ascii_isalnum (*lx->p) || *lx->p == '_'))
        lx->p++;
      add_token (lx->tokens, TOK_NAME, lx->line, g_strndup (s, (gsize) (lx->p - s)));
      return TRUE;
    }
  if (g_ascii_isdigit (c) || (c == '.' && lx->p + 1 < lx->end && g_ascii_isdigit (lx->p[1])))
    return lex_number (lx, error);
  if (c == '"' || c == '\'')
    {
      g_autoptr(GString) buf = g_string_new (NULL);
      if (!lex_string (lx->p, lx->end, &lx->p, buf))
        return lex_error (lx->path, lx->line, error, "unterminated string");
      add_token (lx->tokens, TOK_STRING, lx->line, g_string_free (g_steal_pointer (&buf), FALSE));
      return TRUE;
    }
  return lex_operator (lx, error);
}

static GArray *
lex (const char *text, gsize len, const char *path, GError **error)
{
  g_autoptr(GArray) tokens = g_array_new (FALSE, TRUE, sizeof (Token));
  g_autoptr(GArray) indents = g_array_new (FALSE, FALSE, sizeof (guint));
  guint zero = 0;
  Lexer lx = { text, text + len, path, 1, 0, TRUE, indents, tokens };

  g_array_set_clear_func (tokens, token_clear);
  g_array_append_val (indents, zero);
  while (lx.p < lx.end)
    {
      if (lx.at_line_start && lx.nesting == 0)
        {
          LineStart start;
          if (!lex_line_start (&lx, &start, error))
            return NULL;
          if (start == LINE_AT_END)
            break;
          if (start == LINE_BLANK)
            continue;
        }
      if (!lex_next (&lx, error))
        return NULL;
    }
  if (!lx.at_line_start)
    add_token (tokens, TOK_NEWLINE, lx.line, NULL);
  while (indents->len > 1)
    {
      g_array_set_size (indents, indents->len - 1);
      add_token (tokens, TOK_DEDENT, lx.line, NULL);
    }
  add_token (tokens, TOK_END, lx.line, NULL);
  return g_steal_pointer (&tokens);
}

/* ------------------------------------------------------------------ AST */

static ScriptNode *
node_new (ScriptKind kind, guint line)
{
  ScriptNode *node = g_new0 (ScriptNode, 1);
  node->kind = kind;
  node->line = line;
  node->height = 1;
  return node;
}

static GPtrArray *
node_list (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) script_node_free);
}

void
script_node_free (ScriptNode *node)
{
  if (node == NULL)
    return;
  g_free (node->s);
  script_node_free (node->a);
  script_node_free (node->b);
  script_node_free (node->c);
  g_clear_pointer (&node->items, g_ptr_array_unref);
  g_clear_pointer (&node->names, g_ptr_array_unref);
  g_clear_pointer (&node->body, g_ptr_array_unref);
  g_clear_pointer (&node->orelse, g_ptr_array_unref);
  g_clear_pointer (&node->params, g_ptr_array_unref);
  g_free (node);
}

void
script_module_free (ScriptModule *module)
{
  if (module == NULL)
    return;
  g_free (module->path);
  g_clear_pointer (&module->body, g_ptr_array_unref);
  g_free (module);
}

/* ------------------------------------------------------------------ parser */

static Token *
peek (Parser *p)
{
  return &g_array_index (p->tokens, Token, p->pos);
}

static Token *
advance (Parser *p)
{
  Token *t = peek (p);
  if (t->kind != TOK_END)
    p->pos++;
  return t;
}

static gboolean
is_op (Parser *p, const char *op)
{
  Token *t = peek (p);
  return t->kind == TOK_OP && strcmp (t->text, op) == 0;
}

static gboolean
is_name (Parser *p, const char *name)
{
  Token *t = peek (p);
  return t->kind == TOK_NAME && strcmp (t->text, name) == 0;
}

static gboolean
parse_error (Parser *p, const char *expected)
{
  if (p->error && *p->error)
    return FALSE;
  Token *t = peek (p);
  const char *got = t->kind == TOK_NEWLINE ? "end of line" : t->kind == TOK_INDENT ? "indent"
                  : t->kind == TOK_DEDENT ? "dedent" : t->kind == TOK_END ? "end of file"
                  : t->text ? t->text : "number";
  g_set_error (p->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
               "%s line %u: expected %s, found \"%s\"", p->path, t->line, expected, got);
  return FALSE;
}

static gboolean
expect_op (Parser *p, const char *op)
{
  if (!is_op (p, op))
    {
      g_autofree char *what = g_strdup_printf ("\"%s\"", op);
      return parse_error (p, what);
    }
  advance (p);
  return TRUE;
}

static ScriptNode *parse_expr (Parser *p);
static GPtrArray *parse_suite (Parser *p);

/* Every expression node records the height of its subtree, so one limit
 * (MAX_EXPR_DEPTH) covers every way of nesting: brackets, operator chains
 * (x + x + …), postfix chains (x[0][0]…, x.a.a…) and prefixes (not not …).
 * The builder's evaluator and script_node_free() then recurse no deeper. */
static guint
child_height (const ScriptNode *child)
{
  return child ? child->height : 0;
}

static gboolean
seal (Parser *p, ScriptNode *node)
{
  guint h = MAX (MAX (child_height (node->a), child_height (node->b)), child_height (node->c));

  for (guint k = 0; node->items && k < node->items->len; k++)
    h = MAX (h, child_height (g_ptr_array_index (node->items, k)));
  node->height = h + 1;
  if (node->height > MAX_EXPR_DEPTH)
    {
      parse_error (p, "a shallower expression (nesting limit reached)");
      return FALSE;
    }
  return TRUE;
}

/* seal(), freeing the node when it is too tall. */
static ScriptNode *
sealed (Parser *p, ScriptNode *node)
{
  if (node != NULL && !seal (p, node))
    {
      script_node_free (node);
      return NULL;
    }
  return node;
}

static gboolean
enter (Parser *p)
{
  if (++p->depth > MAX_EXPR_DEPTH)
    {
      parse_error (p, "a shallower expression (nesting limit reached)");
      return FALSE;
    }
  return TRUE;
}

/* Comma-separated expressions up to closer; items and (optionally)
 * keyword names. Returns FALSE on error. */
static gboolean
parse_sequence (Parser *p, const char *closer, GPtrArray *items, GPtrArray *names, gboolean *trailing)
{
  if (trailing)
    *trailing = FALSE;
  while (!is_op (p, closer))
    {
      char *keyword = NULL;
      if (names && peek (p)->kind == TOK_NAME && p->pos + 1 < p->tokens->len)
        {
          Token *next = &g_array_index (p->tokens, Token, p->pos + 1);
          if (next->kind == TOK_OP && strcmp (next->text, "=") == 0)
            {
              keyword = g_strdup (advance (p)->text);
              advance (p);
            }
        }
      ScriptNode *e = parse_expr (p);
      if (e == NULL)
        {
          g_free (keyword);
          return FALSE;
        }
      g_ptr_array_add (items, e);
      if (names)
        g_ptr_array_add (names, keyword);
      if (!is_op (p, ","))
        break;
      advance (p);
      if (trailing)
        *trailing = TRUE;
    }
  return expect_op (p, closer);
}

static ScriptNode *
parse_slice_or_expr (Parser *p)
{
  guint line = peek (p)->line;
  ScriptNode *lo = NULL;
  if (!is_op (p, ":"))
    {
      lo = parse_expr (p);
      if (lo == NULL || !is_op (p, ":"))
        return lo;
    }
  advance (p);
  ScriptNode *slice = node_new (SCRIPT_SLICE, line);
  slice->a = lo;
  if (!is_op (p, "]") && !is_op (p, ",") && !is_op (p, ":"))
    if ((slice->b = parse_expr (p)) == NULL)
      {
        script_node_free (slice);
        return NULL;
      }
  if (is_op (p, ":"))
    {
      advance (p);
      if (!is_op (p, "]") && !is_op (p, ","))
        if ((slice->c = parse_expr (p)) == NULL)
          {
            script_node_free (slice);
            return NULL;
          }
    }
  return sealed (p, slice);
}

static ScriptNode *
parse_atom (Parser *p, gboolean *paren)
{
  Token *t = peek (p);
  ScriptNode *node;
  *paren = FALSE;

  switch (t->kind)
    {
    case TOK_NAME:
      advance (p);
      if (strcmp (t->text, "None") == 0)
        return node_new (SCRIPT_NONE, t->line);
      if (strcmp (t->text, "True") == 0 || strcmp (t->text, "False") == 0)
        {
          node = node_new (SCRIPT_BOOL, t->line);
          node->i = t->text[0] == 'T';
          return node;
        }
      if (strcmp (t->text, "inf") == 0 || strcmp (t->text, "nan") == 0)
        {
          node = node_new (SCRIPT_FLOAT, t->line);
          node->f = t->text[0] == 'i' ? INFINITY : NAN;
          return node;
        }
      node = node_new (SCRIPT_NAME, t->line);
      node->s = g_strdup (t->text);
      return node;
    case TOK_INT:
      advance (p);
      node = node_new (SCRIPT_INT, t->line);
      node->i = t->i;
      return node;
    case TOK_FLOAT:
      advance (p);
      node = node_new (SCRIPT_FLOAT, t->line);
      node->f = t->f;
      return node;
    case TOK_STRING:
      {
        GString *buf = g_string_new (NULL);
        guint line = t->line;
        while (peek (p)->kind == TOK_STRING)
          g_string_append (buf, advance (p)->text);
        node = node_new (SCRIPT_STRING, line);
        node->s = g_string_free (buf, FALSE);
        return node;
      }
    case TOK_OP:
      if (strcmp (t->text, "...") == 0)
        {
          advance (p);
          return node_new (SCRIPT_ELLIPSIS, t->line);
        }
      if (strcmp (t->text, "(") == 0)
        {
          advance (p);
          g_autoptr(GPtrArray) items = node_list ();
          gboolean trailing;
          if (!parse_sequence (p, ")", items, NULL, &trailing))
            return NULL;
          if (items->len == 1 && !trailing)
            {
              *paren = TRUE;
              return g_ptr_array_steal_index (items, 0);
            }
          node = node_new (SCRIPT_TUPLE, t->line);
          node->items = g_steal_pointer (&items);
          return sealed (p, node);
        }
      if (strcmp (t->text, "[") == 0)
        {
          advance (p);
          node = node_new (SCRIPT_LIST, t->line);
          node->items = node_list ();
          if (!parse_sequence (p, "]", node->items, NULL, NULL))
            {
              script_node_free (node);
              return NULL;
            }
          return sealed (p, node);
        }
      if (strcmp (t->text, "{") == 0)
        {
          advance (p);
          node = node_new (SCRIPT_DICT, t->line);
          node->items = node_list ();
          while (!is_op (p, "}"))
            {
              ScriptNode *k = parse_expr (p);
              if (k == NULL)
                {
                  script_node_free (node);
                  return NULL;
                }
              g_ptr_array_add (node->items, k);
              ScriptNode *v = expect_op (p, ":") ? parse_expr (p) : NULL;
              if (v == NULL)
                {
                  script_node_free (node);
                  return NULL;
                }
              g_ptr_array_add (node->items, v);
              if (!is_op (p, ","))
                break;
              advance (p);
            }
          if (!expect_op (p, "}"))
            {
              script_node_free (node);
              return NULL;
            }
          return sealed (p, node);
        }
      break;
    default:
      break;
    }
  parse_error (p, "an expression");
  return NULL;
}

static ScriptNode *
parse_postfix (Parser *p)
{
  gboolean paren;
  ScriptNode *node = parse_atom (p, &paren);

  while (node)
    {
      guint line = peek (p)->line;
      if (is_op (p, "("))
        {
          advance (p);
          ScriptNode *call = node_new (SCRIPT_CALL, line);
          call->a = node;
          call->items = node_list ();
          call->names = g_ptr_array_new_with_free_func (g_free);
          node = call;
          if (!parse_sequence (p, ")", call->items, call->names, NULL))
            {
              script_node_free (node);
              return NULL;
            }
        }
      else if (is_op (p, "["))
        {
          advance (p);
          ScriptNode *sub = node_new (SCRIPT_SUBSCRIPT, line);
          sub->a = node;
          sub->flag = paren;
          node = sub;
          g_autoptr(GPtrArray) parts = node_list ();
          while (!is_op (p, "]"))
            {
              ScriptNode *part = parse_slice_or_expr (p);
              if (part == NULL)
                {
                  script_node_free (node);
                  return NULL;
                }
              g_ptr_array_add (parts, part);
              if (!is_op (p, ","))
                break;
              advance (p);
            }
          if (!expect_op (p, "]") || parts->len == 0)
            {
              parse_error (p, "a subscript");
              script_node_free (node);
              return NULL;
            }
          if (parts->len == 1)
            sub->b = g_ptr_array_steal_index (parts, 0);
          else
            {
              sub->b = node_new (SCRIPT_TUPLE, line);
              sub->b->items = g_steal_pointer (&parts);
              sub->b->height = 1;
              for (guint k = 0; k < sub->b->items->len; k++)
                sub->b->height = MAX (sub->b->height, 1 + child_height (g_ptr_array_index (sub->b->items, k)));
            }
        }
      else if (is_op (p, "."))
        {
          advance (p);
          if (peek (p)->kind != TOK_NAME)
            {
              parse_error (p, "an attribute name");
              script_node_free (node);
              return NULL;
            }
          ScriptNode *attr = node_new (SCRIPT_ATTRIBUTE, line);
          attr->a = node;
          attr->s = g_strdup (advance (p)->text);
          node = attr;
        }
      else
        break;
      paren = FALSE;
      if (!seal (p, node))
        {
          script_node_free (node);
          return NULL;
        }
    }
  return node;
}

static ScriptNode *
make_binary (const char *op, ScriptNode *a, ScriptNode *b, guint line)
{
  ScriptNode *node = node_new (SCRIPT_BINARY, line);
  node->s = g_strdup (op);
  node->a = a;
  node->b = b;
  return node;
}

static ScriptNode *parse_unary (Parser *p);

static ScriptNode *
parse_binary_level (Parser *p, int level)
{
  static const char *const levels[][7] = {
    { "or", NULL },
    { "and", NULL },
    { "==", "!=", "<", ">", "<=", ">=", NULL },
    { "|", NULL },
    { "^", NULL },
    { "&", NULL },
    { "<<", ">>", NULL },
    { "+", "-", NULL },
    { "*", "/", "//", "%", "@", NULL },
  };
  if (level >= (int) G_N_ELEMENTS (levels))
    return parse_unary (p);
  if (level == 2 && is_name (p, "not"))
    {
      guint line = advance (p)->line;
      if (!enter (p))
        return NULL;
      ScriptNode *inner = parse_binary_level (p, 2);
      p->depth--;
      if (inner == NULL)
        return NULL;
      ScriptNode *node = node_new (SCRIPT_UNARY, line);
      node->s = g_strdup ("not");
      node->a = inner;
      return sealed (p, node);
    }
  ScriptNode *left = parse_binary_level (p, level + 1);
  while (left)
    {
      const char *op = NULL;
      Token *t = peek (p);
      for (guint k = 0; levels[level][k]; k++)
        if ((t->kind == TOK_OP || t->kind == TOK_NAME) && strcmp (t->text, levels[level][k]) == 0)
          op = levels[level][k];
      if (level == 2 && (is_name (p, "is") || is_name (p, "in")))
        op = t->text;
      if (op == NULL)
        break;
      advance (p);
      char *opname = g_strdup (op);
      if (strcmp (op, "is") == 0 && is_name (p, "not"))
        {
          advance (p);
          g_free (opname);
          opname = g_strdup ("is not");
        }
      ScriptNode *right = parse_binary_level (p, level + 1);
      if (right == NULL)
        {
          g_free (opname);
          script_node_free (left);
          return NULL;
        }
      left = sealed (p, make_binary (opname, left, right, t->line));
      g_free (opname);
    }
  return left;
}

static ScriptNode *
parse_unary (Parser *p)
{
  if (is_op (p, "-") || is_op (p, "+") || is_op (p, "~"))
    {
      Token *t = advance (p);
      if (!enter (p))
        return NULL;
      ScriptNode *inner = parse_unary (p);
      p->depth--;
      if (inner == NULL)
        return NULL;
      if (t->text[0] == '-' && inner->kind == SCRIPT_INT)
        {
          inner->i = -inner->i;
          return inner;
        }
      if (t->text[0] == '-' && inner->kind == SCRIPT_FLOAT)
        {
          inner->f = -inner->f;
          return inner;
        }
      if (t->text[0] == '+')
        return inner;
      ScriptNode *node = node_new (SCRIPT_UNARY, t->line);
      node->s = g_strdup (t->text);
      node->a = inner;
      return sealed (p, node);
    }
  return parse_postfix (p);
}

static ScriptNode *
parse_expr (Parser *p)
{
  if (!enter (p))
    return NULL;
  ScriptNode *node = parse_binary_level (p, 0);
  p->depth--;
  return node;
}

/* a, b, c  → TUPLE (flag = trailing comma) or the single expression. */
static ScriptNode *
parse_expr_list (Parser *p)
{
  guint line = peek (p)->line;
  ScriptNode *first = parse_expr (p);
  if (first == NULL || !is_op (p, ","))
    return first;
  ScriptNode *tuple = node_new (SCRIPT_TUPLE, line);
  tuple->items = node_list ();
  g_ptr_array_add (tuple->items, first);
  while (is_op (p, ","))
    {
      advance (p);
      tuple->flag = TRUE;
      if (is_op (p, "=") || is_op (p, ":") || peek (p)->kind == TOK_NEWLINE || is_name (p, "in"))
        break;
      tuple->flag = FALSE;
      ScriptNode *e = parse_expr (p);
      if (e == NULL)
        {
          script_node_free (tuple);
          return NULL;
        }
      g_ptr_array_add (tuple->items, e);
    }
  return sealed (p, tuple);
}

static gboolean
expect_newline (Parser *p)
{
  if (peek (p)->kind == TOK_END)
    return TRUE;
  if (peek (p)->kind != TOK_NEWLINE)
    return parse_error (p, "end of line");
  advance (p);
  return TRUE;
}

static ScriptNode *parse_statement (Parser *p);

static ScriptNode *
parse_def (Parser *p)
{
  guint line = advance (p)->line;
  if (peek (p)->kind != TOK_NAME)
    {
      parse_error (p, "a function name");
      return NULL;
    }
  g_autoptr(ScriptNode) def = node_new (SCRIPT_DEF, line);
  def->s = g_strdup (advance (p)->text);
  def->params = node_list ();
  if (!expect_op (p, "("))
    return NULL;
  while (!is_op (p, ")"))
    {
      if (is_op (p, "*"))
        {
          advance (p);
          if (!is_op (p, ","))
            continue;
          advance (p);
          continue;
        }
      if (peek (p)->kind != TOK_NAME)
        {
          parse_error (p, "a parameter name");
          return NULL;
        }
      ScriptNode *param = node_new (SCRIPT_PARAM, peek (p)->line);
      param->s = g_strdup (advance (p)->text);
      g_ptr_array_add (def->params, param);
      if (is_op (p, ":"))
        {
          advance (p);
          if ((param->a = parse_expr (p)) == NULL)
            return NULL;
        }
      if (is_op (p, "="))
        {
          advance (p);
          if ((param->b = parse_expr (p)) == NULL)
            return NULL;
        }
      if (!is_op (p, ","))
        break;
      advance (p);
    }
  if (!expect_op (p, ")"))
    return NULL;
  if (is_op (p, "->"))
    {
      advance (p);
      if ((def->b = parse_expr (p)) == NULL)
        return NULL;
    }
  if (!expect_op (p, ":") || (def->body = parse_suite (p)) == NULL)
    return NULL;
  return g_steal_pointer (&def);
}

static ScriptNode *
parse_if (Parser *p)
{
  guint line = advance (p)->line;   /* if / elif */
  g_autoptr(ScriptNode) node = node_new (SCRIPT_IF, line);
  if ((node->a = parse_expr (p)) == NULL || !expect_op (p, ":") || (node->body = parse_suite (p)) == NULL)
    return NULL;
  if (is_name (p, "elif"))
    {
      ScriptNode *inner = parse_if (p);
      if (inner == NULL)
        return NULL;
      node->orelse = node_list ();
      g_ptr_array_add (node->orelse, inner);
    }
  else if (is_name (p, "else"))
    {
      advance (p);
      if (!expect_op (p, ":") || (node->orelse = parse_suite (p)) == NULL)
        return NULL;
    }
  else
    node->orelse = node_list ();
  return g_steal_pointer (&node);
}

static ScriptNode *
parse_simple (Parser *p)
{
  guint line = peek (p)->line;
  ScriptNode *first = parse_expr_list (p);
  if (first == NULL)
    return NULL;
  g_autoptr(ScriptNode) node = NULL;
  if (is_op (p, ":") || is_op (p, "="))
    {
      node = node_new (SCRIPT_ASSIGN, line);
      node->items = node_list ();
      if (first->kind == SCRIPT_TUPLE)
        {
          node->flag = first->flag;
          for (guint k = 0; k < first->items->len; k++)
            g_ptr_array_add (node->items, g_ptr_array_index (first->items, k));
          g_ptr_array_set_free_func (first->items, NULL);
          script_node_free (first);
        }
      else
        g_ptr_array_add (node->items, first);
      if (is_op (p, ":"))
        {
          advance (p);
          if ((node->b = parse_expr (p)) == NULL)
            return NULL;
        }
      if (is_op (p, "="))
        {
          advance (p);
          if ((node->a = parse_expr_list (p)) == NULL)
            return NULL;
        }
    }
  else if (is_op (p, "+=") || is_op (p, "-=") || is_op (p, "*=") || is_op (p, "/="))
    {
      char op[2] = { advance (p)->text[0], 0 };
      ScriptNode *value = parse_expr (p);
      if (value == NULL)
        {
          script_node_free (first);
          return NULL;
        }
      node = node_new (SCRIPT_ASSIGN, line);
      node->items = node_list ();
      node->flag = TRUE;   /* augmented: an in-place op */
      node->c = make_binary (op, first, value, line);
      node->a = NULL;
    }
  else
    {
      node = node_new (SCRIPT_EXPR, line);
      node->a = first;
    }
  if (!expect_newline (p))
    return NULL;
  return g_steal_pointer (&node);
}

static ScriptNode *
parse_statement (Parser *p)
{
  Token *t = peek (p);
  guint line = t->line;
  ScriptNode *node;

  if (t->kind == TOK_NAME)
    {
      if (strcmp (t->text, "def") == 0)
        return parse_def (p);
      if (strcmp (t->text, "if") == 0)
        return parse_if (p);
      if (strcmp (t->text, "class") == 0)
        {
          advance (p);
          if (peek (p)->kind != TOK_NAME)
            {
              parse_error (p, "a class name");
              return NULL;
            }
          g_autoptr(ScriptNode) cls = node_new (SCRIPT_CLASS, line);
          cls->s = g_strdup (advance (p)->text);
          cls->items = node_list ();
          if (is_op (p, "("))
            {
              advance (p);
              if (!parse_sequence (p, ")", cls->items, NULL, NULL))
                return NULL;
            }
          if (!expect_op (p, ":") || (cls->body = parse_suite (p)) == NULL)
            return NULL;
          return g_steal_pointer (&cls);
        }
      if (strcmp (t->text, "for") == 0)
        {
          advance (p);
          g_autoptr(ScriptNode) loop = node_new (SCRIPT_FOR, line);
          loop->items = node_list ();
          while (!is_name (p, "in"))
            {
              ScriptNode *target = parse_postfix (p);
              if (target == NULL)
                return NULL;
              g_ptr_array_add (loop->items, target);
              if (!is_op (p, ","))
                break;
              advance (p);
            }
          if (!is_name (p, "in"))
            {
              parse_error (p, "\"in\"");
              return NULL;
            }
          advance (p);
          if ((loop->a = parse_expr (p)) == NULL || !expect_op (p, ":") || (loop->body = parse_suite (p)) == NULL)
            return NULL;
          return g_steal_pointer (&loop);
        }
      if (strcmp (t->text, "while") == 0)
        {
          advance (p);
          g_autoptr(ScriptNode) loop = node_new (SCRIPT_WHILE, line);
          if ((loop->a = parse_expr (p)) == NULL || !expect_op (p, ":") || (loop->body = parse_suite (p)) == NULL)
            return NULL;
          return g_steal_pointer (&loop);
        }
      if (strcmp (t->text, "return") == 0 || strcmp (t->text, "raise") == 0)
        {
          advance (p);
          node = node_new (t->text[2] == 't' ? SCRIPT_RETURN : SCRIPT_RAISE, line);
          if (peek (p)->kind != TOK_NEWLINE && peek (p)->kind != TOK_END)
            if ((node->a = parse_expr_list (p)) == NULL)
              {
                script_node_free (node);
                return NULL;
              }
          if (!expect_newline (p))
            {
              script_node_free (node);
              return NULL;
            }
          return node;
        }
      if (strcmp (t->text, "pass") == 0 || strcmp (t->text, "break") == 0 || strcmp (t->text, "continue") == 0)
        {
          advance (p);
          node = node_new (t->text[0] == 'p' ? SCRIPT_PASS : t->text[0] == 'b' ? SCRIPT_BREAK : SCRIPT_CONTINUE, line);
          if (!expect_newline (p))
            {
              script_node_free (node);
              return NULL;
            }
          return node;
        }
      if (strcmp (t->text, "import") == 0 || strcmp (t->text, "from") == 0)
        {
          while (peek (p)->kind != TOK_NEWLINE && peek (p)->kind != TOK_END)
            advance (p);
          expect_newline (p);
          return node_new (SCRIPT_IMPORT, line);
        }
    }
  return parse_simple (p);
}

static GPtrArray *
parse_statements_until_dedent (Parser *p, gboolean top)
{
  g_autoptr(GPtrArray) body = node_list ();
  while (TRUE)
    {
      TokKind k = peek (p)->kind;
      if (k == TOK_END || (!top && k == TOK_DEDENT))
        break;
      if (k == TOK_NEWLINE)
        {
          advance (p);
          continue;
        }
      if (k == TOK_INDENT || k == TOK_DEDENT)
        {
          parse_error (p, "a statement");
          return NULL;
        }
      ScriptNode *stmt = parse_statement (p);
      if (stmt == NULL)
        return NULL;
      g_ptr_array_add (body, stmt);
    }
  return g_steal_pointer (&body);
}

static GPtrArray *
parse_suite (Parser *p)
{
  if (peek (p)->kind != TOK_NEWLINE)
    {
      ScriptNode *stmt = parse_statement (p);
      if (stmt == NULL)
        return NULL;
      GPtrArray *body = node_list ();
      g_ptr_array_add (body, stmt);
      return body;
    }
  advance (p);
  if (peek (p)->kind != TOK_INDENT)
    {
      parse_error (p, "an indented block");
      return NULL;
    }
  if (++p->depth > MAX_EXPR_DEPTH)
    {
      parse_error (p, "shallower blocks (nesting limit reached)");
      return NULL;
    }
  advance (p);
  GPtrArray *body = parse_statements_until_dedent (p, FALSE);
  p->depth--;
  if (body == NULL)
    return NULL;
  if (peek (p)->kind == TOK_DEDENT)
    advance (p);
  return body;
}

ScriptModule *
script_module_parse (const char *text, gsize len, const char *path, GError **error)
{
  g_autoptr(GArray) tokens = lex (text, len, path, error);
  if (tokens == NULL)
    return NULL;
  Parser p = { .path = path, .tokens = tokens, .error = error };
  GPtrArray *body = parse_statements_until_dedent (&p, TRUE);
  if (body == NULL)
    return NULL;
  ScriptModule *module = g_new0 (ScriptModule, 1);
  module->path = g_strdup (path);
  module->body = body;
  return module;
}

static gboolean
append_dotted (GString *out, const ScriptNode *node)
{
  if (node->kind == SCRIPT_NAME)
    {
      g_string_append (out, node->s);
      return TRUE;
    }
  if (node->kind == SCRIPT_ATTRIBUTE && append_dotted (out, node->a))
    {
      g_string_append_c (out, '.');
      g_string_append (out, node->s);
      return TRUE;
    }
  return FALSE;
}

char *
script_node_dotted_name (const ScriptNode *node)
{
  g_autoptr(GString) out = g_string_new (NULL);
  if (node == NULL || !append_dotted (out, node))
    return NULL;
  return g_string_free (g_steal_pointer (&out), FALSE);
}

static void
append_type (GString *out, const ScriptNode *node)
{
  switch (node->kind)
    {
    case SCRIPT_NAME:
    case SCRIPT_ATTRIBUTE:
      {
        g_autofree char *name = script_node_dotted_name (node);
        g_string_append (out, name ? name : "?");
      }
      break;
    case SCRIPT_NONE:
      g_string_append (out, "None");
      break;
    case SCRIPT_SUBSCRIPT:
      append_type (out, node->a);
      g_string_append_c (out, '[');
      if (node->b->kind == SCRIPT_TUPLE)
        for (guint k = 0; k < node->b->items->len; k++)
          {
            if (k)
              g_string_append (out, ", ");
            append_type (out, g_ptr_array_index (node->b->items, k));
          }
      else
        append_type (out, node->b);
      g_string_append_c (out, ']');
      break;
    case SCRIPT_TUPLE:
    case SCRIPT_LIST:
      g_string_append_c (out, '[');
      for (guint k = 0; k < node->items->len; k++)
        {
          if (k)
            g_string_append (out, ", ");
          append_type (out, g_ptr_array_index (node->items, k));
        }
      g_string_append_c (out, ']');
      break;
    case SCRIPT_STRING:
      g_string_append_printf (out, "\"%s\"", node->s);
      break;
    case SCRIPT_INT:
      g_string_append_printf (out, "%" G_GINT64_FORMAT, node->i);
      break;
    default:
      g_string_append (out, "?");
    }
}

char *
script_node_to_type_string (const ScriptNode *node)
{
  if (node == NULL)
    return NULL;
  GString *out = g_string_new (NULL);
  append_type (out, node);
  return g_string_free (out, FALSE);
}
