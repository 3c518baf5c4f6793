"""Translates a SAM template into the CloudFormation template a stack on
moto is created from, as `sam package` and `sam deploy` would: the SAM
translator (aws-sam-translator, installed with cfn-lint) expands
AWS::Serverless::* resources, and each function's CodeUri directory
becomes the object BUCKET/<directory name>.zip.

Resources of the types moto's CloudFormation cannot build (UNBUILT) are
left out of the stack; references to them in what remains become the
strings "<LogicalId>" and "<LogicalId.Attribute>", so that the rest of the
stack builds. Their checks stay static (internal/deploytest).

Usage: python3 samtranslate.py TEMPLATE BUCKET REGION
Prints {"template": {...}, "unbuilt": {"LogicalId": "Type", ...}}.
"""

import json
import os
import re
import sys

UNBUILT = ("AWS::CloudWatch::Alarm", "AWS::ApiGatewayV2::")


def main():
    path, bucket, region = sys.argv[1:4]
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    from cfnlint.decode import decode
    from samtranslator.translator.transform import transform

    sam, problems = decode(path)
    if problems:
        sys.exit("%s: %s" % (path, "; ".join(str(p) for p in problems)))
    sam = json.loads(json.dumps(sam))  # cfn-lint's node types to plain ones
    for res in sam["Resources"].values():
        if res.get("Type") == "AWS::Serverless::Function":
            code = res["Properties"]["CodeUri"].rstrip("/").split("/")[-1]
            res["Properties"]["CodeUri"] = {"Bucket": bucket, "Key": code + ".zip"}
    cfn = transform(sam, {}, None)

    unbuilt = {k: r["Type"] for k, r in cfn["Resources"].items() if r["Type"].startswith(UNBUILT)}
    for k in unbuilt:
        del cfn["Resources"][k]
    for r in cfn["Resources"].values():
        deps = r.get("DependsOn")
        if isinstance(deps, str):
            deps = [deps]
        if deps is not None:
            deps = [d for d in deps if d not in unbuilt]
            if deps:
                r["DependsOn"] = deps
            else:
                del r["DependsOn"]
    cfn["Resources"] = stand_in(cfn["Resources"], unbuilt)
    cfn["Outputs"] = stand_in(cfn.get("Outputs", {}), unbuilt)
    json.dump({"template": cfn, "unbuilt": unbuilt}, sys.stdout)


def stand_in(node, unbuilt):
    """node with every reference to an unbuilt resource replaced."""
    if isinstance(node, list):
        return [stand_in(n, unbuilt) for n in node]
    if not isinstance(node, dict):
        return node
    if list(node) == ["Ref"] and node["Ref"] in unbuilt:
        return "<%s>" % node["Ref"]
    if list(node) == ["Fn::GetAtt"]:
        target = node["Fn::GetAtt"]
        if isinstance(target, str):
            target = target.split(".", 1)
        if target[0] in unbuilt:
            return "<%s.%s>" % tuple(target)
    if list(node) == ["Fn::Sub"]:
        sub = node["Fn::Sub"]
        text, names = (sub, {}) if isinstance(sub, str) else sub

        def repl(m):
            return "<%s>" % m.group(1) if m.group(1).split(".")[0] in unbuilt else m.group(0)

        text = re.sub(r"\$\{([A-Za-z0-9:.]+)\}", repl, text)
        names = stand_in(names, unbuilt)
        return {"Fn::Sub": text if not names else [text, names]}
    return {k: stand_in(v, unbuilt) for k, v in node.items()}


if __name__ == "__main__":
    main()
