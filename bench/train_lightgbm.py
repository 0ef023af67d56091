"""Times Python's LightGBM (PyPI `lightgbm`) on the exact inputs and parameters
of a tracecast model: the peer of `tracecast train`'s final fit.

Usage: train_lightgbm.py INPUTS.parquet MODEL_DIR [REPEATS]
  INPUTS.parquet  `tracecast train --export-inputs` (one column per input, then label, target_ns)
  MODEL_DIR       the model directory of that run (its model.json gives the parameters)
Prints one line per repeat: `python lightgbm fit: <seconds> s` (Dataset construction
plus boosting, the same span as tracecast's `final_fit_seconds`), then the
prediction agreement with tracecast's own model on the same rows.
"""
import json
import sys
import time

import lightgbm as lgb
import numpy as np
import pandas as pd


def params_of(card):
    # The same object tracecast hands LightGBM (train/src/config.rs, lightgbm_params).
    l = card["lightgbm"]
    params = {
        "objective": "regression",
        "num_iterations": l["num_iterations"],
        "learning_rate": l["learning_rate"],
        "num_leaves": l["num_leaves"],
        "min_data_in_leaf": l["min_data_in_leaf"],
        "feature_fraction": l["feature_fraction"],
        "bagging_fraction": l["bagging_fraction"],
        "bagging_freq": l["bagging_freq"],
        "lambda_l2": l["lambda_l2"],
        "max_bin": l["max_bin"],
        "seed": l["seed"],
        "deterministic": True,
        "force_row_wise": True,
        "verbosity": -1,
    }
    if l["num_threads"] > 0:
        params["num_threads"] = l["num_threads"]
    return params


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    inputs, model_dir = argv[1], argv[2]
    repeats = int(argv[3]) if len(argv) > 3 else 3
    card = json.load(open(f"{model_dir}/model.json"))
    df = pd.read_parquet(inputs)
    names = card["features"]
    x = np.ascontiguousarray(df[names].to_numpy(dtype=np.float64))
    y = df["label"].to_numpy(dtype=np.float32)
    params = params_of(card)
    print(f"python lightgbm {lgb.__version__}: {x.shape[0]} rows x {x.shape[1]} inputs, {params['num_iterations']} rounds")
    booster = None
    for _ in range(repeats):
        start = time.perf_counter()
        data = lgb.Dataset(x, label=y, feature_name=names, free_raw_data=False)
        booster = lgb.train(params, data)
        print(f"python lightgbm fit: {time.perf_counter() - start:.3f} s")
    ours = lgb.Booster(model_file=f"{model_dir}/model.txt")
    diff = np.abs(booster.predict(x) - ours.predict(x))
    print(f"max |python - tracecast| prediction on the training rows: {diff.max():.2e} (transformed target)")


if __name__ == "__main__":
    main(sys.argv)
