"""The AWS CLI's conventions, end to end through `cairn store` against RGW: an s3:// URL
without endpoint or region, the endpoint and region from the environment or a profile, the keys
from a profile in the shared files, and the precedence of the environment over the files
(docs/stores.md, "Endpoint, region and credentials")."""
import os
import random
import tempfile

from cli_support import check, finish, run, s3_url


def main():
    if s3_url() is None:  # sets nothing else; fails in CI without RGW
        finish()
    bucket = os.environ["S3_BUCKET"]
    endpoint = os.environ["S3_ENDPOINT"]
    region = os.environ.get("S3_REGION") or "us-east-1"
    key, secret = os.environ["S3_ACCESS_KEY"], os.environ["S3_SECRET_KEY"]
    root = f"cairn-aws-{random.randrange(10**12)}"
    bare = f"s3://{bucket}/{root}"  # no endpoint, no region: both come from elsewhere

    with tempfile.TemporaryDirectory() as home:
        os.makedirs(f"{home}/.aws")
        with open(f"{home}/.aws/credentials", "w") as f:
            f.write(f"[default]\naws_access_key_id = {key}\naws_secret_access_key = wrong\n"
                    f"[lake]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
        with open(f"{home}/.aws/config", "w") as f:
            f.write(f"[profile lake]\nregion = {region}\nendpoint_url = {endpoint}\n"
                    "[profile elsewhere]\nendpoint_url = http://127.0.0.1:9\n")
        # The files only, at their default places under HOME: nothing AWS_* in the environment.
        for name in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[name]
        os.environ["HOME"] = home

        def cairn(*args, stdin=b"", **extra):
            return run(*args, stdin=stdin, env=extra, isolate_aws=False)

        r = cairn("store", "put", bare, "a.txt", stdin=b"from a profile", AWS_PROFILE="lake")
        check(r.returncode == 0, f"put with profile lake's keys, endpoint and region: {r.stderr!r}")
        r = cairn("store", "get", bare, "a.txt", AWS_PROFILE="lake")
        check(r.returncode == 0 and r.stdout == b"from a profile", f"get back: {r.stderr!r}")

        # The default profile's secret is wrong, and its files name no endpoint: the store is
        # AWS's regional endpoint, out of reach here, so the endpoint comes from the variable.
        r = cairn("store", "get", bare, "a.txt", AWS_ENDPOINT_URL_S3=endpoint, AWS_REGION=region)
        check(r.returncode != 0 and b"403" in r.stderr,
              f"the default profile's wrong secret is used, and refused: {r.stderr!r}")
        # The environment's keys come before any profile's.
        r = cairn("store", "get", bare, "a.txt", AWS_ENDPOINT_URL_S3=endpoint, AWS_REGION=region,
                  AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        check(r.returncode == 0 and r.stdout == b"from a profile",
              f"environment keys over the default profile: {r.stderr!r}")
        # AWS_ENDPOINT_URL_S3 comes before the profile's endpoint_url, and the URL before both.
        r = cairn("store", "get", bare, "a.txt", AWS_PROFILE="lake",
                  AWS_ENDPOINT_URL_S3="http://127.0.0.1:9")
        check(r.returncode != 0 and b"127.0.0.1:9" in r.stderr,
              f"AWS_ENDPOINT_URL_S3 over the profile's endpoint_url: {r.stderr!r}")
        r = cairn("store", "get", f"{bare}?endpoint={endpoint}", "a.txt", AWS_PROFILE="lake",
                  AWS_ENDPOINT_URL_S3="http://127.0.0.1:9")
        check(r.returncode == 0 and r.stdout == b"from a profile",
              f"the URL's endpoint over the variables: {r.stderr!r}")

        # A named profile that does not exist is an error that names it, before any request.
        r = cairn("store", "get", bare, "a.txt", AWS_PROFILE="nosuch")
        check(r.returncode == 2 and b"nosuch" in r.stderr, f"missing profile: {r.stderr!r}")
        # A shared file that cannot be parsed is an error, not an absent file.
        with open(f"{home}/bad-config", "w") as f:
            f.write("[profile lake]\nregion\n")
        r = cairn("store", "get", bare, "a.txt", AWS_PROFILE="lake",
                  AWS_CONFIG_FILE=f"{home}/bad-config")
        check(r.returncode == 2 and b"bad-config:2" in r.stderr, f"bad config file: {r.stderr!r}")
        # No keys anywhere: named, with where to put them.
        os.remove(f"{home}/.aws/credentials")
        r = cairn("store", "get", bare, "a.txt", AWS_ENDPOINT_URL=endpoint)
        check(r.returncode == 2 and b"no S3 credentials" in r.stderr, f"no keys: {r.stderr!r}")
        r = cairn("store", "rm", f"{bare}?endpoint={endpoint}&region={region}", "a.txt",
                  AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        check(r.returncode == 0, f"clean up: {r.stderr!r}")
    finish()


main()
