#!/bin/sh
# Runs a GUI test in its own X server.
exec xvfb-run -a -s '-screen 0 1280x800x24' "$@"
