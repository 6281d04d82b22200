"""tip-ratio.py: a stage in Python for sluice's exec, over JSON lines (the
json module alone: no pyarrow). For each trip it writes its payment type
and tip_ratio, the tip over the fare (null for no fare):

  sluice run 'scan ./taxi | exec --in jsonl --out jsonl -- python3 tip-ratio.py | show'

does what sluice's own stages do in

  sluice run "scan ./taxi | select 'payment_type, case when fare_amount <> 0
      then tip_amount / fare_amount end as tip_ratio' | show"

Rows stream through one at a time; SLUICE_TASK_INDEX and SLUICE_PIECE say
which task of a run --workers this is, should a program want to know.
"""
import json
import sys

out = sys.stdout
for line in sys.stdin:
    row = json.loads(line)
    fare, tip = row.get("fare_amount"), row.get("tip_amount")
    ratio = None
    if fare not in (None, 0) and tip is not None:
        ratio = float(tip) / float(fare)
    out.write(json.dumps({"payment_type": row.get("payment_type"), "tip_ratio": ratio}) + "\n")
