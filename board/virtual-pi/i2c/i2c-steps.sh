#!/bin/sh
# i2c-steps.sh BUS FILE: runs a "SECONDS ADDR REG HEXBYTES" schedule (i2c-steps.txt) against
# /dev/i2c-BUS — each line is written SECONDS after the start, then the script exits (1 if any
# line failed). Runs fine in the background or as a systemd service: no terminal input, TERM
# stops it at once. The work is i2c-load.sh's (--steps mode), which must sit beside this file;
# the environment variables it documents apply here too.
here=$(dirname "$0")
export I2C_LOAD_NAME=i2c-steps.sh
exec sh "$here/i2c-load.sh" --steps "$@"
