#include "test-report.h"

#include <stdio.h>

gboolean
graft_test_report_enabled (void)
{
  const char *path = g_getenv ("GRAFT_TEST_REPORT");

  return path != NULL && path[0] != '\0';
}

void
graft_test_report (const char *key, const char *format, ...)
{
  const char *path = g_getenv ("GRAFT_TEST_REPORT");
  g_autofree char *value = NULL;
  g_autofree char *line = NULL;
  va_list args;
  FILE *file;

  if (path == NULL || path[0] == '\0')
    return;

  va_start (args, format);
  value = g_strdup_vprintf (format, args);
  va_end (args);

  /* One line per key: newlines inside a value would split it. */
  g_strdelimit (value, "\n", ' ');
  line = g_strdup_printf ("%s=%s\n", key, value);

  file = fopen (path, "a");
  if (file == NULL)
    {
      g_printerr ("graft: cannot write the test report %s\n", path);
      return;
    }
  fputs (line, file);
  fclose (file);
}
