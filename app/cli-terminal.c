/* Text that graft-cli prints comes from the file: node and value names,
 * metadata, doc strings, error messages quoting them. A hostile file could
 * put terminal escapes there (OSC 0 retitles the window, OSC 52 writes the
 * clipboard, CSI moves the cursor over earlier lines), so everything
 * written to stdout and stderr passes through a filter that prints control
 * characters as visible escapes: C0 bytes other than newline and tab, DEL,
 * the C1 controls U+0080–U+009F and bytes that are not UTF-8 (a lone 0x9B
 * is an 8-bit CSI on some terminals), and the bidi controls (U+202E
 * reverses what follows it). Names are escaped once more where they are
 * printed (graft_cli_escape_name), newlines and tabs included, since a
 * newline in a name would print a line the file made up. JSON output is
 * unaffected: json-glib already writes those characters as \u00XX. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

typedef struct {
  int fd;
  guint8 pending[4];   /* the start of a UTF-8 sequence cut by the stdio buffer */
  gsize n_pending;
} EscapingStream;

/* Where escaped text goes: a file descriptor, through a buffer on the
 * stack, or a string. The stream path allocates nothing: GLib reports a
 * failed allocation through stderr while it holds its allocator's lock,
 * and an allocation here would wait for that lock forever. */
typedef struct {
  int fd;              /* -1: append to string */
  GString *string;
  char buffer[512];
  gsize used;
  gboolean failed;
} EscapeSink;

static gboolean
write_all (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, data, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return FALSE;
      data += n;
      len -= (gsize) n;
    }
  return TRUE;
}

static void
sink_flush (EscapeSink *sink)
{
  if (sink->string != NULL)
    g_string_append_len (sink->string, sink->buffer, (gssize) sink->used);
  else if (!sink->failed && !write_all (sink->fd, sink->buffer, sink->used))
    sink->failed = TRUE;
  sink->used = 0;
}

static void
sink_put (EscapeSink *sink, const char *data, gsize len)
{
  while (len > 0)
    {
      gsize n = MIN (len, sizeof sink->buffer - sink->used);
      memcpy (sink->buffer + sink->used, data, n);
      sink->used += n;
      data += n;
      len -= n;
      if (sink->used == sizeof sink->buffer)
        sink_flush (sink);
    }
}

/* "\\xNN" for a byte, "\\uNNNN" for a character (printf might allocate). */
static void
sink_put_escape (EscapeSink *sink, char kind, guint value)
{
  char text[8] = { '\\', kind };
  int digits = kind == 'x' ? 2 : 4;

  for (int d = 0; d < digits; d++)
    text[2 + d] = "0123456789abcdef"[(value >> (4 * (digits - 1 - d))) & 0xf];
  sink_put (sink, text, 2 + (gsize) digits);
}

/* Characters that reorder or hide the text around them: the bidi
 * embeddings, overrides and isolates (U+202E shows what follows it
 * reversed) and the invisible direction marks. Graft's own text never
 * holds them. */
static gboolean
is_bidi_control (gunichar u)
{
  return u == 0x061c || u == 0x200e || u == 0x200f || (u >= 0x202a && u <= 0x202e) || (u >= 0x2066 && u <= 0x2069);
}

/* Puts data into sink with the control characters made visible: C0 bytes
 * (newline and tab too unless keep_layout), DEL, C1 controls, bidi
 * controls and bytes that are not UTF-8. Returns how many bytes at the end
 * form an incomplete UTF-8 sequence (not put). */
static gsize
escape_into (EscapeSink *sink, const guint8 *data, gsize len, gboolean keep_layout)
{
  gsize i = 0;
  while (i < len)
    {
      guint8 c = data[i];
      if (c < 0x80)
        {
          if ((c < 0x20 && !(keep_layout && (c == '\n' || c == '\t'))) || c == 0x7f)
            sink_put_escape (sink, 'x', c);
          else
            sink_put (sink, (const char *) data + i, 1);
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
          if ((u >= 0x80 && u <= 0x9f) || is_bidi_control (u))
            sink_put_escape (sink, 'u', u);
          else
            sink_put (sink, (const char *) data + i, seq);
          i += seq;
          continue;
        }
      sink_put_escape (sink, 'x', c);
      i++;
    }
  return 0;
}

char *
graft_cli_escape_name (const char *name)
{
  EscapeSink sink = { -1, g_string_new (NULL) };
  gsize len = strlen (name);
  gsize cut = escape_into (&sink, (const guint8 *) name, len, FALSE);

  for (gsize i = len - cut; i < len; i++)
    sink_put_escape (&sink, 'x', (guint8) name[i]);
  sink_flush (&sink);
  return g_string_free (sink.string, FALSE);
}

static ssize_t
escaping_write (void *cookie, const char *data, size_t len)
{
  EscapingStream *s = cookie;
  EscapeSink sink = { s->fd };
  gsize taken = 0;

  /* A sequence cut by the last write: completed from data's first bytes. */
  if (s->n_pending > 0)
    {
      guint8 joined[8];
      gsize n = MIN (len, sizeof joined - s->n_pending);
      memcpy (joined, s->pending, s->n_pending);
      memcpy (joined + s->n_pending, data, n);
      gsize kept = escape_into (&sink, joined, s->n_pending + n, TRUE);
      if (kept > n)
        {
          /* Still incomplete (data was shorter than the sequence). */
          memcpy (s->pending, joined, s->n_pending + n);
          s->n_pending += n;
          return (ssize_t) len;
        }
      taken = n - kept;
      s->n_pending = 0;
    }
  gsize kept = escape_into (&sink, (const guint8 *) data + taken, len - taken, TRUE);
  memcpy (s->pending, data + len - kept, kept);
  s->n_pending = kept;
  sink_flush (&sink);
  return sink.failed ? -1 : (ssize_t) len;
}

static int
escaping_close (void *cookie)
{
  EscapingStream *s = cookie;
  EscapeSink sink = { s->fd };

  /* A sequence never completed is shown byte by byte. */
  for (gsize i = 0; i < s->n_pending; i++)
    sink_put_escape (&sink, 'x', s->pending[i]);
  sink_flush (&sink);
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
