"""Training: the trainers' runner, precision, collators, MLM, the ``make models`` plan."""
