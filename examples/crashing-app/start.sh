#!/bin/sh
# Stages fine (it has a start.sh) but exits as soon as it starts.
echo "crashing on purpose"
exit 3
