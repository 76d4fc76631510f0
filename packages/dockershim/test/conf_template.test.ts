import { CNI_CONF_TEMPLATE } from '@kh/testkit';
import { describe, expect, it } from 'vitest';
import { ConfTemplate, templateData } from '../src/network/template.js';

// --cni-conf-template reads containerd's conf_template syntax (Go text/template); these are the
// forms containerd's documentation and our node template use, and what Go prints for them.

const render = (text: string, cidrs: string[]) => ConfTemplate.parse(text).execute(templateData(cidrs));

describe('conf template', () => {
  it('gives containerd its data: the first CIDR, all of them, a default route per family', () => {
    expect(templateData(['10.244.0.0/24', 'fd00::/64', '10.245.0.0/24'])).toEqual({
      PodCIDR: '10.244.0.0/24',
      PodCIDRRanges: ['10.244.0.0/24', 'fd00::/64', '10.245.0.0/24'],
      Routes: ['0.0.0.0/0', '::/0'],
    });
  });

  it("renders containerd's single-stack and dual-stack examples", () => {
    expect(render('{"subnet": "{{.PodCIDR}}"}', ['10.88.1.0/24'])).toBe('{"subnet": "10.88.1.0/24"}');
    const dual =
      '[{{range $i, $range := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$range}}"}]{{end}}]';
    expect(render(dual, ['10.1.0.0/24', 'fd00::/64'])).toBe(
      '[[{"subnet": "10.1.0.0/24"}], [{"subnet": "fd00::/64"}]]',
    );
    expect(render(dual, ['10.1.0.0/24'])).toBe('[[{"subnet": "10.1.0.0/24"}]]');
  });

  it("renders the harness nodes' template (testkit's, containerd renders the same) into a valid conflist", () => {
    const conflist = JSON.parse(render(CNI_CONF_TEMPLATE, ['10.244.7.0/24']));
    expect(conflist.plugins.map((p: { type: string }) => p.type)).toEqual(['bridge', 'portmap', 'firewall']);
    expect(conflist.plugins[0].ipam).toEqual({
      type: 'host-local',
      ranges: [[{ subnet: '10.244.7.0/24' }]],
      routes: [{ dst: '0.0.0.0/0' }],
    });
  });

  it('prints lists as Go does, ranges over dot, takes else branches and trims around {{- -}}', () => {
    expect(render('{{.Routes}}', ['10.0.0.0/8', 'fd00::/8'])).toBe('[0.0.0.0/0 ::/0]');
    expect(render('{{range .Routes}}<{{.}}>{{end}}', ['10.0.0.0/8'])).toBe('<0.0.0.0/0>');
    expect(render('{{range $r := .Routes}}{{$r}};{{end}}', ['fd00::/8'])).toBe('::/0;');
    expect(render('{{if .PodCIDR}}yes{{else}}no{{end}}', [])).toBe('no');
    expect(render('{{range .PodCIDRRanges}}x{{else}}none{{end}}', [])).toBe('none');
    expect(render('a  {{- .PodCIDR -}}  b{{/* a comment */}}', ['1.2.3.0/24'])).toBe('a1.2.3.0/24b');
  });

  it('refuses what it does not implement, naming it, when parsed', () => {
    expect(() => ConfTemplate.parse('{{ printf "%s" .PodCIDR }}')).toThrow(/unsupported action/);
    expect(() => ConfTemplate.parse('{{range .Routes}}')).toThrow(/missing \{\{end\}\}/);
    expect(() => ConfTemplate.parse('{{end}}')).toThrow(/unexpected \{\{end\}\}/);
    expect(() => ConfTemplate.parse('{{ .PodCIDR')).toThrow(/unclosed action/);
    expect(() => render('{{.NodeName}}', ['1.2.3.0/24'])).toThrow(/can't evaluate field NodeName/);
    expect(() => render('{{$nope}}', [])).toThrow(/undefined variable/);
    expect(() => render('{{range .PodCIDR}}{{end}}', ['1.2.3.0/24'])).toThrow(/can't iterate/);
  });
});
