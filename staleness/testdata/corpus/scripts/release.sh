#!/bin/sh
set -e
