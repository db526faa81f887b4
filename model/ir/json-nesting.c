#include "ir/json-nesting.h"
#include "ir/model-error.h"

gboolean
graft_json_check_nesting (const char *text, gsize length, guint max_depth, const char *what, GError **error)
{
  guint depth = 0, deepest = 0;
  gsize passed_at = 0;
  gboolean in_string = FALSE;

  for (gsize i = 0; i < length; i++)
    {
      char c = text[i];

      if (in_string)
        {
          if (c == '\\')
            i++;   /* the escaped character cannot end the string */
          else if (c == '"')
            in_string = FALSE;
          continue;
        }
      if (c == '"')
        in_string = TRUE;
      else if (c == '[' || c == '{')
        {
          if (++depth > deepest)
            deepest = depth;
          if (depth == max_depth + 1 && passed_at == 0)
            passed_at = i;
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
