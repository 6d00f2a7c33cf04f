"""The run: join, recover, check, open and optimize the study; carry out the policy's decisions."""
