#include "ir/json-nesting.h"
#include "ir/model-error.h"

/* The brackets and commas of JSON text, outside its strings, in order. */
typedef struct {
  const char *text;
  gsize length;
  gsize at;          /* the byte next() returned last */
  gsize next;
} Scanner;

static gboolean
next (Scanner *s, char *c)
{
  gboolean in_string = FALSE;

  for (gsize i = s->next; i < s->length; i++)
    {
      char byte = s->text[i];

      if (in_string)
        {
          if (byte == '\\')
            i++;   /* the escaped character cannot end the string */
          else if (byte == '"')
            in_string = FALSE;
        }
      else if (byte == '"')
        in_string = TRUE;
      else if (byte == '[' || byte == '{' || byte == ']' || byte == '}' || byte == ',')
        {
          *c = byte;
          s->at = i;
          s->next = i + 1;
          return TRUE;
        }
    }
  s->next = s->length;
  return FALSE;
}

gboolean
graft_json_check_nesting (const char *text, gsize length, guint max_depth, const char *what, GError **error)
{
  Scanner s = { text, length, 0, 0 };
  guint depth = 0, deepest = 0;
  gsize passed_at = 0;
  char c;

  while (next (&s, &c))
    {
      if (c == '[' || c == '{')
        {
          if (++depth > deepest)
            deepest = depth;
          if (depth == max_depth + 1 && passed_at == 0)
            passed_at = s.at;
        }
      else if ((c == ']' || c == '}') && depth > 0)
        depth--;
    }
  if (deepest <= max_depth)
    return TRUE;
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
               "%s nests arrays and objects %u deep (past %u at byte %" G_GSIZE_FORMAT "); refused", what, deepest,
               max_depth, passed_at);
  return FALSE;
}

gboolean
graft_json_count_values (const char *text, gsize length, guint64 max_values, guint64 *values, const char *what,
                         GError **error)
{
  Scanner s = { text, length, 0, 0 };
  guint64 count = 1;
  char c;

  while (next (&s, &c))
    if (c != ']' && c != '}' && ++count > max_values)
      {
        g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                     "%s holds more than %" G_GUINT64_FORMAT " JSON values (passed at byte %" G_GSIZE_FORMAT
                     "); refused", what, max_values, s.at);
        return FALSE;
      }
  *values = count;
  return TRUE;
}
