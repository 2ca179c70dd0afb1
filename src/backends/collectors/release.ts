/**
 * Collector releases in one place: which release tags are well-formed, how versions are ordered,
 * and how a release's checksum file is named (`<type>-v<version>.zip.sha256`, the reference layout).
 */
// The three functions alone: the package's index loads its 47 modules (ranges, the class…).
import gt from 'semver/functions/gt.js';
import prerelease from 'semver/functions/prerelease.js';
import valid from 'semver/functions/valid.js';

/**
 * A version as semver 2.0 writes one (its own regular expression), without the build part: numbers
 * of any size and no leading zeros, an optional pre-release. A version too large for any release
 * is well-formed, and simply unknown.
 */
const VERSION =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

const SUFFIX = '.zip.sha256';

/** `latest`, or a version without its `v` (which may be omitted); undefined when neither. */
export function parseReleaseTag(value: string): string | undefined {
  if (value === 'latest') return value;
  const version = value.startsWith('v') ? value.slice(1) : value;
  return VERSION.test(version) ? version : undefined;
}

/** Whether `version` (without a `v`) is a version as semver 2.0 writes one, build part excluded. */
export function isVersion(version: string): boolean {
  return VERSION.test(version);
}

/** The highest of `versions` by semver order, pre-releases excluded; undefined when none is stable. */
export function newestStable(versions: Iterable<string>): string | undefined {
  let best: string | undefined;
  for (const version of versions) {
    // semver's own parser refuses numbers beyond 2^53: such a name is no release to order.
    if (!isVersion(version) || valid(version) !== version) continue;
    if (prerelease(version) !== null) continue;
    if (best === undefined || gt(version, best)) best = version;
  }
  return best;
}

/** The checksum file's name of a release: `<type>-v<version>.zip.sha256`. */
export function checksumFileName(type: string, version: string): string {
  return `${type}-v${version}${SUFFIX}`;
}

/** The version a checksum file's name holds for `type`; undefined for any other name. */
export function versionOfFileName(type: string, name: string): string | undefined {
  const prefix = `${type}-v`;
  if (!name.startsWith(prefix) || !name.endsWith(SUFFIX)) return undefined;
  const version = name.slice(prefix.length, -SUFFIX.length);
  return isVersion(version) ? version : undefined;
}
