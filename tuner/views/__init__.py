"""What the commands show, one module per command or job; nothing is re-exported here, so
importing one view does not load the others' dependencies (optuna, the study analysis).

best (`tuner best`: BestReport, its JSON and table), deploy (env / systemd / args / docker /
vllm-config text; quoting and vllm_config under it), trials (`tuner trials`, `tuner show
N`), compare (`tuner compare A B`), compare_studies (`tuner compare-studies`), dashboard
(optuna-dashboard), report (`tuner report`: write the page of tuner/report/, publish it),
study_access (which stored study, its stored space, opening it), console (the sweep's
live display), bench (`tuner bench`'s live view and table).
"""
