#!/usr/bin/env python3
import sys

print("hello from %s" % sys.argv[1])
