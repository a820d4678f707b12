#!/bin/sh
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29534 WORLD_SIZE=2
RANK=1 LOCAL_RANK=1 /usr/bin/python3 ddp2.py &
RANK=0 LOCAL_RANK=0 /usr/bin/python3 ddp2.py
wait
