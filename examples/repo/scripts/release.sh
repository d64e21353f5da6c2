#!/bin/sh
set -eu
git tag "$1" && make dist
