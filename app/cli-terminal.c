/* Text that graft-cli prints comes from the file: node and value names,
 * metadata, doc strings, error messages quoting them. A hostile file could
 * put terminal escapes there (OSC 0 retitles the window, OSC 52 writes the
 * clipboard, CSI moves the cursor over earlier lines), so everything
 * written to stdout and stderr passes through a filter that prints control
 * characters as visible escapes: C0 bytes other than newline and tab, DEL,
 * the C1 controls U+0080–U+009F and bytes that are not UTF-8 (a lone 0x9B
 * is an 8-bit CSI on some terminals). JSON output is unaffected: json-glib
 * already writes those characters as \u00XX. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

typedef struct {
  int fd;
  guint8 pending[4];   /* the start of a UTF-8 sequence cut by the stdio buffer */
  gsize n_pending;
} EscapingStream;

static gboolean
write_all (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, data, len);
      if (n < 0)
        return FALSE;
      data += n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* Appends data to out with the control characters made visible; returns
 * how many bytes at the end form an incomplete UTF-8 sequence (kept). */
static gsize
escape_into (GString *out, const guint8 *data, gsize len)
{
  gsize i = 0;
  while (i < len)
    {
      guint8 c = data[i];
      if (c < 0x80)
        {
          if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            g_string_append_printf (out, "\\x%02x", c);
          else
            g_string_append_c (out, (char) c);
          i++;
          continue;
        }
      const char *end;
      gsize rest = len - i;
      gsize seq = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      if (seq > rest && g_utf8_get_char_validated ((const char *) data + i, (gssize) rest) == (gunichar) -2)
        return rest;   /* cut sequence: wait for the rest */
      if (seq > 1 && g_utf8_validate ((const char *) data + i, (gssize) MIN (seq, rest), &end) &&
          end == (const char *) data + i + seq)
        {
          gunichar u = g_utf8_get_char ((const char *) data + i);
          if (u >= 0x80 && u <= 0x9f)
            g_string_append_printf (out, "\\u%04x", u);
          else
            g_string_append_len (out, (const char *) data + i, (gssize) seq);
          i += seq;
          continue;
        }
      g_string_append_printf (out, "\\x%02x", c);
      i++;
    }
  return 0;
}

static ssize_t
escaping_write (void *cookie, const char *data, size_t len)
{
  EscapingStream *s = cookie;
  g_autoptr(GString) out = g_string_sized_new (len + 16);
  g_autofree guint8 *joined = g_malloc (s->n_pending + len);

  memcpy (joined, s->pending, s->n_pending);
  memcpy (joined + s->n_pending, data, len);
  gsize kept = escape_into (out, joined, s->n_pending + len);
  memcpy (s->pending, joined + s->n_pending + len - kept, kept);
  s->n_pending = kept;
  return write_all (s->fd, out->str, out->len) ? (ssize_t) len : -1;
}

static int
escaping_close (void *cookie)
{
  EscapingStream *s = cookie;
  g_autoptr(GString) out = g_string_new (NULL);

  /* A sequence never completed is shown byte by byte. */
  for (gsize i = 0; i < s->n_pending; i++)
    g_string_append_printf (out, "\\x%02x", s->pending[i]);
  write_all (s->fd, out->str, out->len);
  s->n_pending = 0;
  return 0;
}

/* The state of the filtered stdout and stderr, which live as long as the
 * process: static rather than allocated (LeakSanitizer reported the
 * allocated ones as lost at exit, on Debian 12's glibc 2.36 — nothing it
 * scanned held a pointer to them). */
static EscapingStream stdout_state, stderr_state;

static FILE *
escaping_stream (EscapingStream *s, int fd, int buffering)
{
  cookie_io_functions_t functions = { NULL, escaping_write, NULL, escaping_close };
  *s = (EscapingStream) { fd };
  FILE *stream = fopencookie (s, "w", functions);
  if (stream != NULL)
    setvbuf (stream, NULL, buffering, BUFSIZ);
  return stream;
}

void
graft_cli_escape_control_output (void)
{
  FILE *out = escaping_stream (&stdout_state, STDOUT_FILENO, isatty (STDOUT_FILENO) ? _IOLBF : _IOFBF);
  FILE *err = escaping_stream (&stderr_state, STDERR_FILENO, _IOLBF);

  fflush (stdout);
  fflush (stderr);
  if (out)
    stdout = out;
  if (err)
    stderr = err;
}
